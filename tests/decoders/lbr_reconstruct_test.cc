#include "pathprof/decoders/lbr_reconstruct.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace pathprof::decoders {
namespace {

// Hand-assembled code at runtime 0x401000 (image vaddr 0x1000, bias 0x400000):
//   0x1000: 74 02            je   0x1004
//   0x1002: 90               nop
//   0x1003: 90               nop
//   0x1004: 75 fa            jne  0x1000
//   0x1006: e8 f5 ff ff ff   call 0x1000
//   0x100b: c3               ret
//   0x100c: eb f2            jmp  0x1000
//   0x100e: 48 8b 00         mov  (%rax),%rax
//   0x1011: 06               (invalid in 64-bit mode)
//   0x1012: b8 eb 00 00 00   mov $0xeb,%eax   (0x1013 read alone is "jmp .+0")
//   0x1017: c3               ret
class FakeCode : public CodeMap {
 public:
  FakeCode() {
    auto bytes = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{
        0x74, 0x02, 0x90, 0x90, 0x75, 0xfa, 0xe8, 0xf5, 0xff, 0xff, 0xff, 0xc3,
        0xeb, 0xf2, 0x48, 0x8b, 0x00, 0x06, 0xb8, 0xeb, 0x00, 0x00, 0x00, 0xc3});
    cache_ = std::make_unique<BranchCache>(
        std::vector<CodeSegment>{{0x1000, std::span<const uint8_t>(*bytes)}}, bytes);
    region_.begin = 0x401000;
    region_.end = 0x401000 + bytes->size();
    region_.bias = 0x400000;
    region_.cache = cache_.get();
  }
  const CodeRegion* Find(uint32_t, uint64_t addr) override {
    return region_.Contains(addr) ? &region_ : nullptr;
  }
  BranchCache* cache() { return cache_.get(); }

 private:
  std::unique_ptr<BranchCache> cache_;
  CodeRegion region_;
};

constexpr uint64_t B = 0x400000;

// Builds a newest-first stack from chronological entries.
std::vector<LbrEntry> Stack(std::vector<LbrEntry> chronological) {
  return std::vector<LbrEntry>(chronological.rbegin(), chronological.rend());
}

TEST(LbrReconstruct, WalksFallThroughAndEmitsNotTakenConditionals) {
  FakeCode code;
  LbrReconstructor r(&code);
  auto entries = Stack({{B + 0x1006, B + 0x1000, 5, false},    // call
                        {B + 0x1004, B + 0x1000, 7, true},     // jne taken
                        {B + 0x1004, B + 0x1000, 9, false}});  // jne taken again
  LbrSample s;
  s.pid = 7;
  s.tid = 8;
  s.time_ns = 99;
  s.ip = B + 0x1000;
  s.entries = entries;
  std::vector<BranchBatch> out;
  r.Reconstruct(s, &out);
  ASSERT_EQ(out.size(), 1u);
  const BranchBatch& b = out[0];
  EXPECT_TRUE(b.window);
  EXPECT_TRUE(b.gap_before);
  EXPECT_EQ(b.pid, 7u);
  EXPECT_EQ(b.tid, 8u);
  ASSERT_EQ(b.events.size(), 5u);
  EXPECT_EQ(b.events[0].kind, BranchKind::kDirectCall);
  EXPECT_EQ(b.events[0].cycles, 5u);
  EXPECT_EQ(b.events[0].instructions, 0u);  // block start unknown for the oldest entry
  // je at 0x1000 not taken: to = next instruction.
  EXPECT_EQ(b.events[1],
            (BranchEvent{B + 0x1000, B + 0x1002, 0, 1, BranchKind::kConditional, false, false}));
  EXPECT_EQ(b.events[2],
            (BranchEvent{B + 0x1004, B + 0x1000, 7, 3, BranchKind::kConditional, true, true}));
  EXPECT_FALSE(b.events[3].taken);
  EXPECT_EQ(b.events[4].instructions, 3u);
  EXPECT_EQ(r.stats().entries, 3u);
  EXPECT_EQ(r.stats().entries_emitted, 3u);
  EXPECT_EQ(r.stats().ranges_walked, 2u);
  EXPECT_EQ(r.stats().not_taken_emitted, 2u);
  EXPECT_EQ(r.stats().instructions, 8u);
  // perf: 1 (oldest source) + 4 + 4 + 0 (ip == to, but from != ip: tail is je + ... stops at je
  // which is the branch at ip? ip == 0x1000 == start, so the je at ip is printed: 1).
  EXPECT_EQ(r.stats().perf_style_instructions, 1u + 4 + 4 + 1);
}

TEST(LbrReconstruct, UnconditionalInRangeSplitsTheSampleAndKeepsBothParts) {
  FakeCode code;
  LbrReconstructor r(&code);
  auto entries = Stack({{B + 0x1006, B + 0x1000},    // call
                        {B + 0x1004, B + 0x1000},    // jne
                        {B + 0x100c, B + 0x1000},    // jmp: range 0x1000..0x100c meets the call
                        {B + 0x1004, B + 0x1000}});  // jne
  LbrSample s;
  s.entries = entries;
  std::vector<BranchBatch> out;
  r.Reconstruct(s, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].events.size(), 3u);  // call, nt je, jne
  ASSERT_EQ(out[1].events.size(), 3u);  // jmp, nt je, jne
  EXPECT_EQ(out[1].events[0].kind, BranchKind::kDirectJump);
  EXPECT_EQ(out[1].events[0].instructions, 0u);
  EXPECT_TRUE(out[1].gap_before);
  const auto& st = r.stats();
  EXPECT_EQ(st.ranges, 3u);
  EXPECT_EQ(st.ranges_walked, 2u);
  EXPECT_EQ(st.ranges_broken[static_cast<size_t>(LbrRangeBreak::kUnconditionalInRange)], 1u);
  EXPECT_EQ(st.entries_emitted, 4u);
  EXPECT_EQ(st.not_taken_emitted, 2u);  // the broken range's je is rolled back, not emitted
  EXPECT_EQ(st.events, 6u);
}

TEST(LbrReconstruct, BadEntriesAreDroppedByReasonNeverGuessed) {
  FakeCode code;
  LbrReconstructor r(&code);
  auto entries = Stack({{B + 0x1006, B + 0x1234},      // call whose encoded target is 0x1000
                        {B + 0x1004, B + 0x1000},      // fine, but its range start is unknown
                        {0, 0},                        // empty slot
                        {B + 0x1002, B + 0x1000},      // nop is not a branch
                        {0x7f0000000000, B + 0x1000},  // no code there
                        {B + 0x1004, B + 0x1000}});    // fine
  LbrSample s;
  s.entries = entries;
  std::vector<BranchBatch> out;
  r.Reconstruct(s, &out);
  const auto& st = r.stats();
  EXPECT_EQ(st.entries, 6u);
  EXPECT_EQ(st.entries_emitted, 2u);
  EXPECT_EQ(st.entries_dropped[static_cast<size_t>(LbrEntryDrop::kTargetMismatch)], 1u);
  EXPECT_EQ(st.entries_dropped[static_cast<size_t>(LbrEntryDrop::kZeroAddress)], 1u);
  EXPECT_EQ(st.entries_dropped[static_cast<size_t>(LbrEntryDrop::kNotABranch)], 1u);
  EXPECT_EQ(st.entries_dropped[static_cast<size_t>(LbrEntryDrop::kNoCode)], 1u);
  EXPECT_EQ(st.entries_emitted + st.entries_dropped_total(), st.entries);
  EXPECT_EQ(st.ranges_broken[static_cast<size_t>(LbrRangeBreak::kEndpointDropped)], 5u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].events.size(), 1u);
  EXPECT_EQ(out[1].events.size(), 1u);
}

TEST(LbrReconstruct, MisalignedAndBackwardsRangesAreCounted) {
  FakeCode code;
  LbrReconstructor r(&code);
  auto count = [&](LbrRangeBreak why) { return r.stats().ranges_broken[static_cast<size_t>(why)]; };
  LbrSample s;
  std::vector<BranchBatch> out;
  // ret lands at 0x1006; the next recorded source 0x1004 lies behind it.
  auto backwards = Stack({{B + 0x100b, B + 0x1006}, {B + 0x1004, B + 0x1000}});
  s.entries = backwards;
  r.Reconstruct(s, &out);
  EXPECT_EQ(count(LbrRangeBreak::kBackwards), 1u);
  // ret lands at 0x1012; the recorded source 0x1013 decodes as a jmp on its own, but the walk
  // from 0x1012 steps over it (mov imm32) — a wrong binary looks like this.
  auto misaligned = Stack({{B + 0x100b, B + 0x1012}, {B + 0x1013, B + 0x1015}});
  s.entries = misaligned;
  r.Reconstruct(s, &out);
  EXPECT_EQ(count(LbrRangeBreak::kMisaligned), 1u);
  // ret lands in the middle of the je; the walk meets invalid bytes.
  auto garbage = Stack({{B + 0x100b, B + 0x1001}, {B + 0x100c, B + 0x1000}});
  s.entries = garbage;
  r.Reconstruct(s, &out);
  EXPECT_EQ(count(LbrRangeBreak::kDecodeError), 1u);
  // ret to an address outside the region, then a source inside it.
  auto leaves = Stack({{B + 0x100b, 0x7f0000000000}, {B + 0x1004, B + 0x1000}});
  s.entries = leaves;
  r.Reconstruct(s, &out);
  EXPECT_EQ(count(LbrRangeBreak::kNoCode), 1u);
  // Into the kernel and back.
  auto cross = Stack({{B + 0x100b, 0xffffffff81000000}, {B + 0x1004, B + 0x1000}});
  s.entries = cross;
  r.Reconstruct(s, &out);
  EXPECT_EQ(count(LbrRangeBreak::kUserKernelCross), 1u);
  EXPECT_EQ(r.stats().ranges_walked, 0u);
  EXPECT_EQ(r.stats().entries_emitted + r.stats().entries_dropped_total(), r.stats().entries);
}

TEST(LbrReconstruct, CallStackModeIsRefused) {
  FakeCode code;
  LbrReconstructor r(&code);
  auto entries = Stack({{B + 0x1006, B + 0x1000}, {B + 0x1006, B + 0x1000}});
  LbrSample s;
  s.entries = entries;
  s.call_stack_mode = true;
  std::vector<BranchBatch> out;
  r.Reconstruct(s, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.stats().entries_dropped[static_cast<size_t>(LbrEntryDrop::kCallStackMode)], 2u);
}

TEST(LbrReconstruct, DuplicateNewestEntryDroppedOnlyWhenAsked) {
  FakeCode code;
  LbrReconstructor::Options opt;
  opt.drop_duplicate_newest = true;
  LbrReconstructor r(&code, opt);
  auto entries =
      Stack({{B + 0x1006, B + 0x1000}, {B + 0x1004, B + 0x1000}, {B + 0x1004, B + 0x1000}});
  LbrSample s;
  s.entries = entries;
  std::vector<BranchBatch> out;
  r.Reconstruct(s, &out);
  EXPECT_EQ(r.stats().entries_dropped[static_cast<size_t>(LbrEntryDrop::kDuplicateEntry)], 1u);
  EXPECT_EQ(r.stats().entries_emitted, 2u);
}

TEST(BranchCache, MemoizesOneScanPerStartAddress) {
  FakeCode code;
  BranchCache* c = code.cache();
  const BranchSite& s = c->NextBranch(0x1002);
  EXPECT_EQ(s.address, 0x1004u);
  EXPECT_EQ(s.instructions, 3u);
  EXPECT_EQ(s.kind, BranchKind::kConditional);
  EXPECT_EQ(s.direct_target, 0x1000u);
  const uint64_t decoded = c->decoded_instructions();
  c->NextBranch(0x1002);
  EXPECT_EQ(c->decoded_instructions(), decoded);
  EXPECT_EQ(c->NextBranch(0x100e).scan, BranchScan::kInvalidBytes);
  EXPECT_EQ(c->NextBranch(0x100e).address, 0x1011u);
  EXPECT_EQ(c->NextBranch(0x2000).scan, BranchScan::kNotCode);
  EXPECT_EQ(c->InstructionsTo(0x1002, 0x1003), 2u);
  EXPECT_EQ(c->InstructionsTo(0x1000, 0x1003), 0u);  // the je is in the way
}

}  // namespace
}  // namespace pathprof::decoders
