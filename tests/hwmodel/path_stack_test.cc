#include "pathprof/hwmodel/path_stack.h"

#include <gtest/gtest.h>

#include "test_streams.h"

namespace pathprof::hwmodel {
namespace {

using testing::Call;
using testing::Cond;
using testing::Descriptors;
using testing::Jmp;
using testing::Of;
using testing::P;
using testing::Ret;
using testing::RunStack;

PathStack Make(const PathStackConfig& c) {
  auto s = PathStack::Create(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

// Figure 5.4's CFG is not in the text; this one follows its caption: S and C do not end with
// branches, A ends with an unconditional jump to B, every other block ends with a conditional
// branch. A loop (C..B, back-edge B->C) with a diamond D/E/F inside, entered through S, A:
//
//   S 0x1000  (no branch)                          falls into A
//   A 0x1008  jmp B            at 0x100b           -> B 0x1030
//   C 0x1010  (no branch, back-edge target)        falls into D
//   D 0x1018  jcc F            at 0x101a           taken -> F 0x1028, not taken -> E 0x1020
//   E 0x1020  jcc B            at 0x1022           taken -> B 0x1030, not taken -> F 0x1028
//   F 0x1028  jcc X            at 0x102a           taken -> X 0x1040, not taken -> B 0x1030
//   B 0x1030  jcc C            at 0x103a           taken -> C 0x1010 (back-edge), nt -> X 0x1040
//   X 0x1040  ret              at 0x1044           -> caller 0x5005
//
// Sample execution, called from 0x5000: S A B | C D(nt) E(t) B | C D(t) F(nt) B | C D(t) F(nt) B
// | C D(nt) E(nt) F(nt) B(nt) X ret. `instructions` per event is the size of the block it ends.
std::vector<BranchEvent> Figure54Execution() {
  return {
      Call(0x5000, 0x1000, 3),         // 0: caller's block
      Jmp(0x100b, 0x1030, 4),          // 1: S+A
      Cond(0x103a, 0x1010, true, 3),   // 2: B back-edge
      Cond(0x101a, 0x1020, false, 4),  // 3: C+D not taken
      Cond(0x1022, 0x1030, true, 2),   // 4: E taken
      Cond(0x103a, 0x1010, true, 3),   // 5: B back-edge
      Cond(0x101a, 0x1028, true, 4),   // 6: D taken
      Cond(0x102a, 0x1030, false, 2),  // 7: F not taken
      Cond(0x103a, 0x1010, true, 3),   // 8: B back-edge
      Cond(0x101a, 0x1028, true, 4),   // 9: D taken
      Cond(0x102a, 0x1030, false, 2),  // 10: F not taken
      Cond(0x103a, 0x1010, true, 3),   // 11: B back-edge
      Cond(0x101a, 0x1020, false, 4),  // 12: D not taken
      Cond(0x1022, 0x1028, false, 2),  // 13: E not taken
      Cond(0x102a, 0x1030, false, 2),  // 14: F not taken
      Cond(0x103a, 0x1040, false, 3),  // 15: B not taken: loop exit
      Ret(0x1044, 0x5005, 2),          // 16: X
  };
}

TEST(PathStackTest, Figure54BallLarusPaths) {
  PathStack stack = Make(BallLarusPreset());
  const auto paths = RunStack(stack, Figure54Execution());
  // Outcome bit i = i-th branch of the path, 1 = taken/unconditional.
  //  - S A B: pushed at the call target 0x1000; jmp (1), back-edge (1) ends it: len 2, 0b11.
  //  - C D(nt) E(t) B: 0, 1, 1 -> 0b110; C D(t) F(nt) B: 1, 0, 1 -> 0b101, twice.
  //  - C D(nt) E(nt) F(nt) B(nt): four 0 bits; the return is update-count, then pops it.
  const std::vector<PathDescriptor> want = {P(0x1000, 2, 0b11), P(0x1010, 3, 0b110),
                                            P(0x1010, 3, 0b101), P(0x1010, 3, 0b101),
                                            P(0x1010, 4, 0b0000)};
  EXPECT_EQ(Descriptors(paths), want);
  // Instructions: 4+3; 4+2+3; 4+2+3; 4+2+3; 4+2+2+3 plus the return's block 2. The call's
  // block (3) belongs to the caller's path.
  ASSERT_EQ(paths.size(), 5u);
  EXPECT_EQ(paths[0].metrics.instructions, 7u);
  EXPECT_EQ(paths[1].metrics.instructions, 9u);
  EXPECT_EQ(paths[4].metrics.instructions, 13u);
  EXPECT_EQ(paths[4].metrics.count, 1u);
  // Taken ordinals: call=1 jmp=2 B=3 | E=4 B=5 | D=6 B=7 | D=8 B=9 | ret=10.
  EXPECT_EQ(paths[0].first_taken, 1u);
  EXPECT_EQ(paths[0].last_taken, 3u);
  EXPECT_EQ(paths[1].first_taken, 3u);
  EXPECT_EQ(paths[1].last_taken, 5u);
  EXPECT_EQ(paths[4].first_taken, 9u);
  EXPECT_EQ(paths[4].last_taken, 10u);
  EXPECT_EQ(stack.stats().paths, 5u);
  EXPECT_EQ(stack.depth(), 1);  // the caller's frame, begun before the stream
}

TEST(PathStackTest, Figure54ExtendedLoopPaths) {
  PathStack stack = Make(ExtendedLoopsPreset(1));
  const auto paths = RunStack(stack, Figure54Execution());
  // Each path may cross one back-edge (update only, counter 0 -> 1); the second ends it.
  //  - S A B | C D(nt) E(t) B: 1,1 | 0,1,1 -> bits 1,1,0,1,1 = 0b11011, len 5.
  //  - C D(t) F(nt) B | C D(t) F(nt) B: 1,0,1,1,0,1 = 0b101101, len 6.
  //  - C D(nt) E(nt) F(nt) B(nt): the return ends it, len 4, all zero.
  const std::vector<PathDescriptor> want = {P(0x1000, 5, 0b11011), P(0x1010, 6, 0b101101),
                                            P(0x1010, 4, 0)};
  EXPECT_EQ(Descriptors(paths), want);
  EXPECT_EQ(paths[0].metrics.instructions, 4u + 3 + 4 + 2 + 3);
}

// main: cond(nt) call f ... cond(nt) back-edge;  f: cond(t) ret. Two iterations.
std::vector<BranchEvent> CallReturnLoop() {
  std::vector<BranchEvent> one = {
      Cond(0x2000, 0x2006, false),  // main
      Call(0x2010, 0x3000),         // main -> f
      Cond(0x3004, 0x3010, true),   // f, forward taken
      Ret(0x3020, 0x2015),          // f -> main
      Cond(0x2020, 0x2026, false),  // main
      Cond(0x2030, 0x2000, true),   // main back-edge
  };
  std::vector<BranchEvent> all = one;
  all.insert(all.end(), one.begin(), one.end());
  return all;
}

TEST(PathStackTest, BallLarusPushesAtCallsAndPopsAtReturns) {
  PathStack stack = Make(BallLarusPreset());
  const auto paths = RunStack(stack, CallReturnLoop());
  // f's path twice; main's path of the second iteration spans the call, which is not recorded
  // (update-count): bits 0 (cond), 0 (cond), 1 (back-edge). The first main path began before
  // the stream: dropped, counted.
  const std::vector<PathDescriptor> want = {P(0x3000, 1, 0b1), P(0x3000, 1, 0b1),
                                            P(0x2000, 3, 0b100)};
  EXPECT_EQ(Descriptors(paths), want);
  EXPECT_EQ(stack.stats().unknown_start, 1u);
}

TEST(PathStackTest, WholeProgramPathPiecesEndAtCallsAndReturns) {
  PathStack stack = Make(WholeProgramPathPreset());
  const auto paths = RunStack(stack, CallReturnLoop());
  // Table 5.2: a call pops the caller's piece, a return pops the callee's and pushes the
  // continuation at the return target.
  const std::vector<PathDescriptor> want = {
      P(0x3000, 1, 0b1),   // f
      P(0x2015, 2, 0b10),  // after the return: cond(nt), back-edge
      P(0x2000, 1, 0b0),   // loop head up to the call: cond(nt)
      P(0x3000, 1, 0b1),   // f
      P(0x2015, 2, 0b10),
  };
  EXPECT_EQ(Descriptors(paths), want);
  EXPECT_EQ(stack.stats().unknown_start, 1u);  // the piece before the first call
  EXPECT_EQ(stack.depth(), 1);
}

// main -> f -> g, g returns, f returns, main back-edge; twice.
std::vector<BranchEvent> NestedCalls() {
  std::vector<BranchEvent> one = {
      Call(0x2010, 0x3000),         // main -> f
      Cond(0x3004, 0x300a, false),  // f
      Call(0x3010, 0x4000),         // f -> g
      Cond(0x4004, 0x400a, false),  // g
      Ret(0x4010, 0x3015),          // g -> f
      Ret(0x3020, 0x2015),          // f -> main
      Cond(0x2030, 0x2000, true),   // main back-edge
  };
  std::vector<BranchEvent> all = one;
  all.insert(all.end(), one.begin(), one.end());
  return all;
}

TEST(PathStackTest, ExtendedCallsOne) {
  PathStack stack = Make(ExtendedCallsPreset(1));
  const auto paths = RunStack(stack, NestedCalls());
  // The call into f is absorbed (update, counter 1); the call into g meets counter == max, so
  // g gets its own entry (update-count, push); g's return pops it; f's return finds counter 1:
  // update and decrement. main's second-iteration path: call(1) f-cond(0) ret(1) back(1).
  const std::vector<PathDescriptor> want = {P(0x4000, 1, 0), P(0x4000, 1, 0), P(0x2000, 4, 0b1101)};
  EXPECT_EQ(Descriptors(paths), want);
  EXPECT_EQ(stack.stats().return_mismatches, 0u);
}

TEST(PathStackTest, ExtendedCallsTwoAndBallLarusOnNestedCalls) {
  PathStack ext2 = Make(ExtendedCallsPreset(2));
  // Both calls and both returns absorbed: call(1) c(0) call(1) c(0) ret(1) ret(1) back(1).
  EXPECT_EQ(Descriptors(RunStack(ext2, NestedCalls())),
            (std::vector<PathDescriptor>{P(0x2000, 7, 0b1110101)}));
  PathStack bl = Make(BallLarusPreset());
  EXPECT_EQ(Descriptors(RunStack(bl, NestedCalls())),
            (std::vector<PathDescriptor>{P(0x4000, 1, 0), P(0x3000, 1, 0), P(0x4000, 1, 0),
                                         P(0x3000, 1, 0), P(0x2000, 1, 1)}));
}

TEST(PathStackTest, SplitsPathsAtMaxLength) {
  PathStackConfig c = BallLarusPreset();
  c.max_path_length = 4;
  PathStack stack = Make(c);
  // Back-edge into 0x6000, then 9 forward conditionals (taken when i is odd), then the
  // back-edge: a 10-branch path. Conditional i sits at 0x6000 + 0x10 i; taken goes +8,
  // not taken falls through +2.
  std::vector<BranchEvent> events = {Cond(0x6100, 0x6000, true)};
  for (int i = 1; i <= 9; ++i) {
    const uint64_t from = 0x6000 + 0x10 * i;
    const bool taken = i % 2 == 1;
    events.push_back(Cond(from, from + (taken ? 8 : 2), taken));
  }
  events.push_back(Cond(0x6100, 0x6000, true));
  // Splits after branches 4 and 8, each new path starting at that branch's target
  // (0x6040 + 2, 0x6080 + 2): 4 + 4 + 2 branches.
  const std::vector<PathDescriptor> want = {P(0x6000, 4, 0b0101), P(0x6042, 4, 0b0101),
                                            P(0x6082, 2, 0b11)};
  EXPECT_EQ(Descriptors(RunStack(stack, events)), want);
  EXPECT_EQ(stack.stats().splits, 2u);

  // A path whose 4th branch is its back-edge ends normally: no split, no empty path.
  PathStack exact = Make(c);
  const std::vector<BranchEvent> four = {Cond(0x6100, 0x6000, true), Cond(0x6010, 0x6012, false),
                                         Cond(0x6020, 0x6022, false), Cond(0x6030, 0x6032, false),
                                         Cond(0x6100, 0x6000, true)};
  EXPECT_EQ(Descriptors(RunStack(exact, four)),
            (std::vector<PathDescriptor>{P(0x6000, 4, 0b1000)}));
  EXPECT_EQ(exact.stats().splits, 0u);
}

TEST(PathStackTest, OverflowDropsOldestAndCounts) {
  PathStackConfig c = BallLarusPreset();
  c.max_depth = 3;
  PathStack stack = Make(c);
  // Four nested calls f1..f4 (call i at 0x1000 i, callee at 0x10000 i), then four returns.
  std::vector<BranchEvent> events;
  for (uint64_t i = 1; i <= 4; ++i) events.push_back(Call(0x1000 * i, 0x10000 * i));
  for (uint64_t i = 4; i >= 1; --i) events.push_back(Ret(0x10000 * i + 0x80, 0x1000 * i + 5));
  // Stack [base]; f1, f2 fit; f3 drops base, f4 drops f1. Returns pop f4, f3, f2; the stack is
  // then empty (a return past the base), f1's return meets a fresh unknown-start base.
  EXPECT_EQ(Descriptors(RunStack(stack, events)),
            (std::vector<PathDescriptor>{P(0x40000, 0, 0), P(0x30000, 0, 0), P(0x20000, 0, 0)}));
  EXPECT_EQ(stack.stats().overflow_dropped, 2u);
  EXPECT_EQ(stack.stats().returns_past_base, 2u);
  EXPECT_EQ(stack.stats().unknown_start, 1u);
  EXPECT_EQ(stack.stats().return_mismatches, 0u);
}

TEST(PathStackTest, LongjmpRepairSkipsThreeFrames) {
  PathStack stack = Make(BallLarusPreset());
  std::vector<BranchEvent> events = {
      Call(0x1000, 0xa000),                           // main -> a
      Cond(0xa004, 0xa008, false),                    // a
      Call(0xa010, 0xb000),                           // a -> b
      Call(0xb010, 0xc000),                           // b -> c
      Call(0xc010, 0xd000),                           // c -> d
      Cond(0xd004, 0xd00a, true),                     // d
      Of(BranchKind::kIndirectJump, 0xd020, 0xa100),  // longjmp back into a
      Cond(0xa104, 0xa108, true),                     // a, after setjmp returned again
      Ret(0xa200, 0x1005),  // a -> main: matches a's frame, three frames below top
  };
  const auto paths = RunStack(stack, events);
  // d's path ends at the indirect jump (update, pop, push at 0xa100). The return matches the
  // frame of the call at 0x1000; the post-longjmp entry, c and b are discarded (counted), and
  // a's path pops with what a recorded before its call: cond(nt).
  EXPECT_EQ(Descriptors(paths),
            (std::vector<PathDescriptor>{P(0xd000, 2, 0b11), P(0xa000, 1, 0b0)}));
  EXPECT_EQ(stack.stats().repairs, 1u);
  EXPECT_EQ(stack.stats().repaired_frames, 3u);
  EXPECT_EQ(stack.stats().return_mismatches, 0u);
  EXPECT_EQ(stack.depth(), 1);
}

TEST(PathStackTest, ReturnMatchingNoFrameIsCountedAndPops) {
  PathStack stack = Make(BallLarusPreset());
  const std::vector<BranchEvent> events = {Call(0x1000, 0xa000), Cond(0xa004, 0xa008, true),
                                           Ret(0xa010, 0x7777)};
  EXPECT_EQ(Descriptors(RunStack(stack, events)), (std::vector<PathDescriptor>{P(0xa000, 1, 1)}));
  EXPECT_EQ(stack.stats().return_mismatches, 1u);
  EXPECT_EQ(stack.stats().repairs, 0u);
}

TEST(PathStackTest, GapDropsOpenPaths) {
  PathStack stack = Make(BallLarusPreset());
  BranchBatch first;
  first.events = {Cond(0x2030, 0x2000, true), Call(0x2010, 0x3000), Cond(0x3004, 0x3010, true)};
  BranchBatch second;
  second.gap_before = true;
  second.events = {Ret(0x3020, 0x2015), Cond(0x2030, 0x2000, true), Cond(0x2004, 0x2006, false),
                   Cond(0x2030, 0x2000, true)};
  std::vector<CompletedPath> got;
  auto sink = [&got](const CompletedPath& c) { got.push_back(c); };
  stack.ProcessBatch(first, sink);
  stack.ProcessBatch(second, sink);
  // At the gap main's path (from 0x2000) and f's path (from 0x3000) are open: both dropped as
  // truncated. After it, the return pops an unknown-start base; only the last loop iteration
  // is emitted whole.
  EXPECT_EQ(Descriptors(got), (std::vector<PathDescriptor>{P(0x2000, 2, 0b10)}));
  EXPECT_EQ(stack.stats().truncated, 2u);
  EXPECT_EQ(stack.stats().gaps, 2u);
  // The first batch's base was popped by its back-edge; the second's by the return, then the
  // caller's continuation by the back-edge.
  EXPECT_EQ(stack.stats().unknown_start, 3u);
  EXPECT_EQ(got[0].first_taken, 2u);  // taken ordinals restart at the gap: ret=1, back=2 (the
  EXPECT_EQ(got[0].last_taken, 3u);   // trigger), back=3 (the end)
}

TEST(PathStackTest, FarTransferCountsButDoesNotBreakPath) {
  PathStack stack = Make(BallLarusPreset());
  const std::vector<BranchEvent> events = {
      Cond(0x2030, 0x2000, true),
      Of(BranchKind::kFarTransfer, 0x2004, 0x2006, 1),  // syscall, resumes at the next insn
      Cond(0x2010, 0x2020, true, 2), Cond(0x2030, 0x2000, true, 3)};
  const auto paths = RunStack(stack, events);
  EXPECT_EQ(Descriptors(paths), (std::vector<PathDescriptor>{P(0x2000, 2, 0b11)}));
  EXPECT_EQ(paths[0].metrics.instructions, 6u);  // the syscall's block counts
  EXPECT_EQ(stack.stats().far_transfers, 1u);
}

TEST(PathStackTest, ClassifiesBranches) {
  EXPECT_EQ(ClassifyBranch(Cond(0x10, 0x8, true)), BranchClass::kBackward);
  EXPECT_EQ(ClassifyBranch(Cond(0x10, 0x10, true)), BranchClass::kBackward);  // to <= from
  EXPECT_EQ(ClassifyBranch(Cond(0x10, 0x8, false)), BranchClass::kForward);
  EXPECT_EQ(ClassifyBranch(Jmp(0x10, 0x20)), BranchClass::kForward);
  EXPECT_EQ(ClassifyBranch(Of(BranchKind::kIndirectCall, 0x10, 0x8)), BranchClass::kCall);
  EXPECT_EQ(ClassifyBranch(Of(BranchKind::kIndirectJump, 0x10, 0x20)), BranchClass::kIndirect);
  EXPECT_EQ(ClassifyBranch(Of(BranchKind::kUnknown, 0x10, 0x20)), BranchClass::kIndirect);
  EXPECT_EQ(OutcomeBit(Jmp(0x10, 0x20)), 1u);
  EXPECT_EQ(OutcomeBit(Cond(0x10, 0x20, false)), 0u);
}

TEST(PathStackTest, ParsesSpecs) {
  auto bl = ParsePathStackConfig("bl");
  ASSERT_TRUE(bl.ok());
  EXPECT_EQ(*bl, BallLarusPreset());
  auto loops = ParsePathStackConfig("extended:loops:3,maxlen=16,depth=8");
  ASSERT_TRUE(loops.ok()) << loops.status().ToString();
  EXPECT_EQ(loops->extension, ExtensionMode::kLoops);
  EXPECT_EQ(loops->max_extension, 3);
  EXPECT_EQ(loops->max_path_length, 16);
  EXPECT_EQ(loops->max_depth, 8);
  EXPECT_EQ(PathStackConfigName(*loops), "extended:loops:3,maxlen=16,depth=8");
  EXPECT_EQ(PathStackConfigName(WholeProgramPathPreset()), "wpp");
  EXPECT_EQ(PathStackConfigName(ExtendedCallsPreset(2)), "extended:calls:2");
  EXPECT_FALSE(ParsePathStackConfig("extended:loops:0").ok());
  EXPECT_FALSE(ParsePathStackConfig("bl,maxlen=65").ok());
  EXPECT_FALSE(ParsePathStackConfig("ball-larus").ok());
  PathStackConfig bad = BallLarusPreset();
  bad.table.Set(BranchClass::kForward, kOpUpdate | kOpUpdateCount);
  EXPECT_FALSE(PathStack::Create(bad).ok());
}

}  // namespace
}  // namespace pathprof::hwmodel
