#include "pathprof/decoders/x86_branch.h"

#include <gtest/gtest.h>

#include <vector>

namespace pathprof::decoders {
namespace {

X86Instruction Decode(std::vector<uint8_t> bytes, uint64_t address) {
  auto r = DecodeX86(bytes, address);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : X86Instruction{};
}

TEST(X86Branch, ConditionalRel8AndRel32ResolveTargetsFromTheNextInstruction) {
  auto je = Decode({0x74, 0x05}, 0x1000);
  EXPECT_EQ(je.length, 2);
  EXPECT_TRUE(je.is_branch);
  EXPECT_EQ(je.kind, BranchKind::kConditional);
  EXPECT_TRUE(je.has_direct_target);
  EXPECT_EQ(je.direct_target, 0x1007u);

  auto jne32 = Decode({0x0f, 0x85, 0x10, 0x00, 0x00, 0x00}, 0x1000);
  EXPECT_EQ(jne32.length, 6);
  EXPECT_EQ(jne32.kind, BranchKind::kConditional);
  EXPECT_EQ(jne32.direct_target, 0x1016u);

  auto back = Decode({0x7c, 0xf0}, 0x1000);  // jl .-14 (negative displacement)
  EXPECT_EQ(back.direct_target, 0x0ff2u);

  auto loop = Decode({0xe2, 0xfe}, 0x3000);
  EXPECT_EQ(loop.kind, BranchKind::kConditional);
  EXPECT_EQ(loop.direct_target, 0x3000u);
}

TEST(X86Branch, DirectJumpsAndCalls) {
  auto jmp8 = Decode({0xeb, 0xfe}, 0x2000);
  EXPECT_EQ(jmp8.kind, BranchKind::kDirectJump);
  EXPECT_EQ(jmp8.direct_target, 0x2000u);
  auto jmp32 = Decode({0xe9, 0x00, 0x01, 0x00, 0x00}, 0x1000);
  EXPECT_EQ(jmp32.length, 5);
  EXPECT_EQ(jmp32.kind, BranchKind::kDirectJump);
  EXPECT_EQ(jmp32.direct_target, 0x1105u);
  auto call = Decode({0xe8, 0xfb, 0xff, 0xff, 0xff}, 0x1000);
  EXPECT_EQ(call.kind, BranchKind::kDirectCall);
  EXPECT_EQ(call.direct_target, 0x1000u);
  EXPECT_EQ(call.next(), 0x1005u);
}

TEST(X86Branch, IndirectTransfersHaveNoDirectTarget) {
  auto call_rax = Decode({0xff, 0xd0}, 0x1000);
  EXPECT_EQ(call_rax.length, 2);
  EXPECT_EQ(call_rax.kind, BranchKind::kIndirectCall);
  EXPECT_FALSE(call_rax.has_direct_target);
  // jmp *0x10(%rip): the rip-relative memory operand is not a direct target.
  auto jmp_rip = Decode({0xff, 0x25, 0x10, 0x00, 0x00, 0x00}, 0x1000);
  EXPECT_EQ(jmp_rip.length, 6);
  EXPECT_EQ(jmp_rip.kind, BranchKind::kIndirectJump);
  EXPECT_FALSE(jmp_rip.has_direct_target);
  auto jmp_rax = Decode({0xff, 0xe0}, 0x1000);
  EXPECT_EQ(jmp_rax.kind, BranchKind::kIndirectJump);
  auto notrack = Decode({0x3e, 0xff, 0xe0}, 0x1000);  // notrack jmp *%rax (CET)
  EXPECT_EQ(notrack.length, 3);
  EXPECT_EQ(notrack.kind, BranchKind::kIndirectJump);
}

TEST(X86Branch, ReturnsAndFarTransfers) {
  EXPECT_EQ(Decode({0xc3}, 0).kind, BranchKind::kReturn);
  auto ret_imm = Decode({0xc2, 0x08, 0x00}, 0);
  EXPECT_EQ(ret_imm.kind, BranchKind::kReturn);
  EXPECT_EQ(ret_imm.length, 3);
  EXPECT_EQ(Decode({0xf3, 0xc3}, 0).kind, BranchKind::kReturn);             // rep ret
  EXPECT_EQ(Decode({0x0f, 0x05}, 0).kind, BranchKind::kFarTransfer);        // syscall
  EXPECT_EQ(Decode({0x0f, 0x34}, 0).kind, BranchKind::kFarTransfer);        // sysenter
  EXPECT_EQ(Decode({0xcd, 0x80}, 0).kind, BranchKind::kFarTransfer);        // int $0x80
  EXPECT_EQ(Decode({0xcc}, 0).kind, BranchKind::kFarTransfer);              // int3
  EXPECT_EQ(Decode({0x48, 0xcf}, 0).kind, BranchKind::kFarTransfer);        // iretq
  EXPECT_EQ(Decode({0x48, 0x0f, 0x07}, 0).kind, BranchKind::kFarTransfer);  // sysretq
  EXPECT_EQ(Decode({0xff, 0x2c, 0x24}, 0).kind, BranchKind::kFarTransfer);  // ljmp *(%rsp)
  EXPECT_EQ(Decode({0x48, 0xcb}, 0).kind, BranchKind::kFarTransfer);        // lretq
}

TEST(X86Branch, NonBranchesReportLengthOnly) {
  auto nop = Decode({0x90}, 0x10);
  EXPECT_FALSE(nop.is_branch);
  EXPECT_EQ(nop.kind, BranchKind::kUnknown);
  EXPECT_EQ(nop.length, 1);
  auto nopw = Decode({0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 0x10);
  EXPECT_FALSE(nopw.is_branch);
  EXPECT_EQ(nopw.length, 6);
  auto mov = Decode({0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00}, 0x10);  // mov 0(%rip),%rax
  EXPECT_FALSE(mov.is_branch);
  EXPECT_EQ(mov.length, 7);
  EXPECT_FALSE(Decode({0x0f, 0x0b}, 0).is_branch);  // ud2 traps but is not a branch
}

TEST(X86Branch, InvalidAndTruncatedBytesAreErrors) {
  std::vector<uint8_t> push_es = {0x06};  // invalid in 64-bit mode
  auto bad = DecodeX86(push_es, 0x400000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.status().message().find("0x400000"), std::string::npos);
  std::vector<uint8_t> short_call = {0xe8, 0x00};
  auto trunc = DecodeX86(short_call, 0);
  ASSERT_FALSE(trunc.ok());
  EXPECT_EQ(trunc.status().code(), ErrorCode::kTruncated);
  auto empty = DecodeX86({}, 0);
  EXPECT_FALSE(empty.ok());
}

}  // namespace
}  // namespace pathprof::decoders
