// The interpreter's fast path (emulator/src/fast_ops.h) must do exactly what the general
// integer path (integer_ops.cc) does: every FastOp form here runs both ways from the same
// random registers, flags and stack bytes, and the registers, flags, rip, the taken bit and
// the bytes stored must all agree. A difference in a single flag or byte fails the test.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decoded_instruction.h"
#include "fast_ops.h"
#include "machine.h"
#include "window_memory.h"

namespace pathprof::emulator {
namespace {

constexpr uint64_t kCode = 0x400000;
constexpr uint64_t kStack = 0x7f0000000000;  // two pages of stack; rsp in the middle

// Memory of two stack pages filled with random bytes; nothing else is mapped.
class BufferGuest : public Guest {
 public:
  explicit BufferGuest(std::mt19937_64& rng) : bytes(2 * kPageSize) {
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  }
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    if (page < kStack || page >= kStack + bytes.size()) return false;
    std::memcpy(out, bytes.data() + (page - kStack), kPageSize);
    *stable = false;
    return true;
  }
  bool LoadVectorState(CpuState*) override { return false; }
  std::vector<uint8_t> bytes;
};

struct Outcome {
  Step step;
  CpuState state;
  bool taken;
  std::vector<uint8_t> stack;  // both pages as the window sees them after the instruction
};

Outcome RunOnce(const DecodedInstruction& d, const CpuState& start, BufferGuest& guest, bool fast) {
  StablePages stable(16);
  EmulatorStats stats;
  WindowMemory memory(stable, 16, &stats);
  memory.Begin(guest);
  Machine m;
  m.s = start;
  m.memory = &memory;
  m.guest = &guest;
  m.stats = &stats;
  m.next_rip = start.rip + d.length;
  Outcome o;
  o.step = fast ? ExecuteFast(m, d) : ExecuteInteger(m, d);
  o.state = m.s;
  o.taken = m.taken;
  o.stack.resize(guest.bytes.size());
  EXPECT_EQ(memory.Read(kStack, o.stack.data(), o.stack.size()), MemoryStatus::kOk);
  return o;
}

struct Form {
  const char* text;
  std::vector<uint8_t> bytes;
};

// One encoding per form the fast path takes: register, memory and immediate operands at each
// size, the high-byte registers, REX registers, and every condition code.
std::vector<Form> Forms() {
  std::vector<Form> f = {
      {"mov rax, rbx", {0x48, 0x89, 0xd8}},
      {"mov eax, [rsp+8]", {0x8b, 0x44, 0x24, 0x08}},
      {"mov [rsp+8], ecx", {0x89, 0x4c, 0x24, 0x08}},
      {"mov ah, bl", {0x88, 0xdc}},
      {"mov bx, [rsp+2]", {0x66, 0x8b, 0x5c, 0x24, 0x02}},
      {"mov r9, imm64", {0x49, 0xb9, 1, 2, 3, 4, 5, 6, 7, 0x88}},
      {"mov dword [rsp], imm32", {0xc7, 0x04, 0x24, 0x78, 0x56, 0x34, 0x92}},
      {"mov byte [rsp+1], imm8", {0xc6, 0x44, 0x24, 0x01, 0x9c}},
      {"movzx eax, byte [rsp]", {0x0f, 0xb6, 0x04, 0x24}},
      {"movzx ecx, ax", {0x0f, 0xb7, 0xc8}},
      {"movzx esi, ah", {0x0f, 0xb6, 0xf4}},
      {"movsx rax, bl", {0x48, 0x0f, 0xbe, 0xc3}},
      {"movsx edx, word [rsp+4]", {0x0f, 0xbf, 0x54, 0x24, 0x04}},
      {"movsxd rax, ecx", {0x48, 0x63, 0xc1}},
      {"lea rax, [rbx+rcx*4+8]", {0x48, 0x8d, 0x44, 0x8b, 0x08}},
      {"lea eax, [rbx+1]", {0x8d, 0x43, 0x01}},
      {"lea r10, [rip+0x100]", {0x4c, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00}},
      {"add rax, rbx", {0x48, 0x01, 0xd8}},
      {"add ecx, imm8", {0x83, 0xc1, 0x7f}},
      {"add al, imm8", {0x04, 0x80}},
      {"add [rsp+8], edx", {0x01, 0x54, 0x24, 0x08}},
      {"add r8, [rsp]", {0x4c, 0x03, 0x04, 0x24}},
      {"sub rax, rbx", {0x48, 0x29, 0xd8}},
      {"sub esp, imm8", {0x83, 0xec, 0x18}},
      {"sub byte [rsp], cl", {0x28, 0x0c, 0x24}},
      {"cmp rax, rbx", {0x48, 0x39, 0xd8}},
      {"cmp dword [rsp+4], imm8", {0x83, 0x7c, 0x24, 0x04, 0xff}},
      {"cmp ax, imm16", {0x66, 0x3d, 0x00, 0x80}},
      {"and eax, ebx", {0x21, 0xd8}},
      {"and rcx, imm32", {0x48, 0x81, 0xe1, 0xf0, 0xff, 0xff, 0x8f}},
      {"or [rsp], al", {0x08, 0x04, 0x24}},
      {"or r11d, imm8", {0x41, 0x83, 0xcb, 0x01}},
      {"xor eax, eax", {0x31, 0xc0}},
      {"xor rdx, [rsp+8]", {0x48, 0x33, 0x54, 0x24, 0x08}},
      {"test eax, eax", {0x85, 0xc0}},
      {"test byte [rsp], imm8", {0xf6, 0x04, 0x24, 0x40}},
      {"test rdi, rsi", {0x48, 0x85, 0xf7}},
      {"inc eax", {0xff, 0xc0}},
      {"inc byte [rsp]", {0xfe, 0x04, 0x24}},
      {"dec r12", {0x49, 0xff, 0xcc}},
      {"dec word [rsp+2]", {0x66, 0xff, 0x4c, 0x24, 0x02}},
      {"push rbx", {0x53}},
      {"push r12", {0x41, 0x54}},
      {"push imm8", {0x6a, 0xfb}},
      {"push [rsp+8]", {0xff, 0x74, 0x24, 0x08}},
      {"pop rcx", {0x59}},
      {"pop [rsp]", {0x8f, 0x04, 0x24}},
      {"pop r15", {0x41, 0x5f}},
      {"jmp rel32", {0xe9, 0x10, 0x00, 0x00, 0x00}},
      {"jmp rax", {0xff, 0xe0}},
      {"jmp [rsp+8]", {0xff, 0x64, 0x24, 0x08}},
      {"call rel32", {0xe8, 0x00, 0x01, 0x00, 0x00}},
      {"call rax", {0xff, 0xd0}},
      {"call [rsp]", {0xff, 0x14, 0x24}},
      {"ret", {0xc3}},
      {"nop", {0x90}},
      {"nop dword [rax+rax]", {0x0f, 0x1f, 0x44, 0x00, 0x00}},
      {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}},
  };
  for (uint8_t cc = 0; cc < 16; ++cc)
    f.push_back({"jcc rel8", {static_cast<uint8_t>(0x70 + cc), 0x20}});
  for (uint8_t cc = 0; cc < 16; ++cc)
    f.push_back({"jcc rel32", {0x0f, static_cast<uint8_t>(0x80 + cc), 0x00, 0x02, 0x00, 0x00}});
  return f;
}

TEST(FastOps, EveryFormAgreesWithTheGeneralPathOnRandomStates) {
  std::mt19937_64 rng(20261126);
  int compared = 0;
  for (const Form& form : Forms()) {
    std::vector<uint8_t> bytes = form.bytes;
    bytes.resize(16, 0x90);
    DecodedInstruction d;
    ASSERT_TRUE(DecodeInstruction(bytes.data(), bytes.size(), kCode, &d)) << form.text;
    ASSERT_NE(d.fast, FastOp::kNone) << form.text << ": not on the fast path";
    for (int round = 0; round < 300; ++round) {
      BufferGuest guest(rng);
      CpuState start;
      for (auto& g : start.gpr) g = rng();
      // Small values half the time, so that zero, carry and sign edges come up.
      if (round % 2) {
        for (auto& g : start.gpr) g = (rng() % 5) - 2;
      }
      start.gpr[kRsp] = kStack + Guest::kPageSize + (rng() % 64) * 8;
      start.rflags = 0x202 | (rng() & 0x8d5);
      start.rip = kCode;
      BufferGuest copy = guest;
      const Outcome fast = RunOnce(d, start, guest, true);
      const Outcome general = RunOnce(d, start, copy, false);
      ASSERT_EQ(fast.step, general.step) << form.text;
      for (int i = 0; i < 16; ++i)
        ASSERT_EQ(fast.state.gpr[i], general.state.gpr[i]) << form.text << " register " << i;
      ASSERT_EQ(fast.state.rflags, general.state.rflags) << form.text;
      ASSERT_EQ(fast.state.rip, general.state.rip) << form.text;
      ASSERT_EQ(fast.taken, general.taken) << form.text;
      ASSERT_EQ(fast.stack, general.stack) << form.text << ": stored bytes differ";
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(Forms().size()) * 300);
}

TEST(FastOps, PlainFormsOnlyTheGeneralPathKeepsTheRest) {
  // Instructions the fast path must leave to the general one: a segment register, a REP
  // prefix, a vector register, ret with an immediate, a far jump through memory.
  const std::vector<Form> general = {
      {"mov eax, ds", {0x8c, 0xd8}},
      {"rep stosb", {0xf3, 0xaa}},
      {"movd eax, xmm0", {0x66, 0x0f, 0x7e, 0xc0}},
      {"ret imm16", {0xc2, 0x08, 0x00}},
      {"jmp far [rax]", {0xff, 0x28}},
      {"adc rax, rbx", {0x48, 0x11, 0xd8}},
  };
  for (const Form& form : general) {
    std::vector<uint8_t> bytes = form.bytes;
    bytes.resize(16, 0x90);
    DecodedInstruction d;
    ASSERT_TRUE(DecodeInstruction(bytes.data(), bytes.size(), kCode, &d)) << form.text;
    EXPECT_EQ(d.fast, FastOp::kNone) << form.text;
  }
}

}  // namespace
}  // namespace pathprof::emulator
