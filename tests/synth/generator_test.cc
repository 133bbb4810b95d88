#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "pathprof/core/pbs.h"
#include "pathprof/synth/executor.h"
#include "pathprof/synth/program.h"
#include "pathprof/synth/workload.h"

namespace pathprof::synth {
namespace {

std::vector<BranchEvent> RunWorkload(const WorkloadSpec& spec, size_t n) {
  auto program = GenerateProgram(spec);
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  Executor ex(*program, spec.seed);
  std::vector<BranchEvent> out;
  ex.Run(n, &out);
  return out;
}

TEST(SynthWorkloads, BundledNamesResolve) {
  auto names = BundledWorkloadNames();
  EXPECT_EQ(names, (std::vector<std::string>{"loops", "branchy", "calls", "large"}));
  for (const auto& n : names) {
    auto spec = BundledWorkload(n, 9);
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(spec->name, n);
    EXPECT_EQ(spec->seed, 9u);
    EXPECT_FALSE(BundledWorkloadDescription(n).empty());
  }
  auto missing = BundledWorkload("gcc");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("loops"), std::string::npos);
}

TEST(SynthWorkloads, RejectsUnusableSpecs) {
  WorkloadSpec s;
  s.functions = 0;
  EXPECT_EQ(GenerateProgram(s).status().code(), ErrorCode::kInvalidArgument);
  s = WorkloadSpec{};
  s.loop_prob = 0.9;
  s.call_prob = 0.9;
  EXPECT_EQ(GenerateProgram(s).status().code(), ErrorCode::kInvalidArgument);
  s = WorkloadSpec{};
  s.skew = -1;
  EXPECT_EQ(GenerateProgram(s).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SynthDeterminism, SameSeedSameStreamOtherSeedOtherStream) {
  for (const auto& name : BundledWorkloadNames()) {
    auto a = RunWorkload(*BundledWorkload(name, 5), 20000);
    auto b = RunWorkload(*BundledWorkload(name, 5), 20000);
    auto c = RunWorkload(*BundledWorkload(name, 6), 20000);
    EXPECT_EQ(a, b) << name;
    EXPECT_NE(a, c) << name;
  }
}

TEST(SynthDeterminism, ChunkingDoesNotChangeTheStream) {
  auto spec = *BundledWorkload("calls", 3);
  auto whole = RunWorkload(spec, 10000);
  auto program = GenerateProgram(spec);
  Executor ex(*program, spec.seed);
  std::vector<BranchEvent> pieces;
  for (size_t n : {1, 7, 992, 5000, 4000}) ex.Run(n, &pieces);
  EXPECT_EQ(whole, pieces);
}

// Replays the stream against the program's layout: every event's `from` is the first branch
// at or after the previous event's `to`, kinds and targets agree with the CFG, instruction
// counts add up, and calls and returns balance like a real stack.
void CheckConsistent(const Program& p, const std::vector<BranchEvent>& events,
                     std::set<BranchKind>* kinds_seen, size_t* max_depth) {
  std::vector<uint64_t> stack;
  uint64_t pc = p.blocks[p.functions[0].entry].start;
  for (size_t i = 0; i < events.size(); ++i) {
    const BranchEvent& e = events[i];
    int64_t bi = p.BlockAt(pc);
    ASSERT_GE(bi, 0) << "event " << i;
    ASSERT_EQ(p.blocks[bi].start, pc) << "event " << i << ": target is not a block start";
    uint32_t instructions = 0;
    while (p.blocks[bi].term == Terminator::kFallThrough)
      instructions += p.blocks[bi++].instructions;
    const Block& b = p.blocks[bi];
    instructions += b.instructions;
    ASSERT_EQ(e.from, b.branch) << "event " << i;
    ASSERT_GE(e.from, pc) << "event " << i;
    ASSERT_EQ(e.kind, Program::KindOf(b.term)) << "event " << i;
    ASSERT_EQ(e.instructions, instructions) << "event " << i;
    ASSERT_GE(e.cycles, e.instructions) << "event " << i;
    kinds_seen->insert(e.kind);
    switch (b.term) {
      case Terminator::kConditional:
        ASSERT_EQ(e.to, e.taken ? p.blocks[b.target].start : b.end) << "event " << i;
        break;
      case Terminator::kJump:
        ASSERT_TRUE(e.taken);
        ASSERT_EQ(e.to, p.blocks[b.target].start);
        break;
      case Terminator::kCall:
        ASSERT_EQ(e.to, p.blocks[p.functions[b.target].entry].start);
        stack.push_back(b.end);
        break;
      case Terminator::kIndirectCall: {
        bool known = false;
        for (uint32_t f : p.tables[b.table].targets)
          known |= e.to == p.blocks[p.functions[f].entry].start;
        ASSERT_TRUE(known) << "event " << i << ": indirect call to a non-target";
        stack.push_back(b.end);
        break;
      }
      case Terminator::kSwitch: {
        bool known = false;
        for (uint32_t t : p.tables[b.table].targets) known |= e.to == p.blocks[t].start;
        ASSERT_TRUE(known) << "event " << i;
        break;
      }
      case Terminator::kReturn:
        ASSERT_FALSE(stack.empty()) << "event " << i << ": return without a call";
        ASSERT_EQ(e.to, stack.back()) << "event " << i << ": return to the wrong place";
        stack.pop_back();
        break;
      case Terminator::kFallThrough:
        FAIL();
    }
    if (e.kind != BranchKind::kConditional) {
      ASSERT_TRUE(e.taken);
    }
    *max_depth = std::max(*max_depth, stack.size());
    pc = e.to;
  }
}

TEST(SynthConsistency, EveryBundledStreamFollowsItsProgram) {
  for (const auto& name : BundledWorkloadNames()) {
    auto spec = *BundledWorkload(name, 11);
    auto program = GenerateProgram(spec);
    ASSERT_TRUE(program.ok());
    Executor ex(*program, spec.seed);
    std::vector<BranchEvent> events;
    ex.Run(200000, &events);
    std::set<BranchKind> kinds;
    size_t depth = 0;
    CheckConsistent(*program, events, &kinds, &depth);
    EXPECT_TRUE(kinds.count(BranchKind::kConditional)) << name;
    EXPECT_TRUE(kinds.count(BranchKind::kDirectCall)) << name;
    EXPECT_TRUE(kinds.count(BranchKind::kReturn)) << name;
    EXPECT_EQ(ex.stats().calls - ex.stats().returns, ex.call_depth()) << name;
    // Call depth is bounded by the levels times the recursion bound.
    EXPECT_LE(depth, (spec.call_levels + 1) * (spec.max_recursion + 1)) << name;
    if (name == "calls") {  // NOLINT
      EXPECT_TRUE(kinds.count(BranchKind::kIndirectCall));
      EXPECT_GT(depth, spec.call_levels) << "recursion never went deeper than the call DAG";
    }
    if (name == "large" || name == "branchy") {
      EXPECT_TRUE(kinds.count(BranchKind::kIndirectJump)) << name;
    }
  }
}

TEST(SynthConsistency, LayoutIsContiguousAndAligned) {
  auto program = GenerateProgram(*BundledWorkload("large", 2));
  ASSERT_TRUE(program.ok());
  const Program& p = *program;
  EXPECT_EQ(p.functions.size(), 1200u);
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const Block& b = p.blocks[i];
    ASSERT_LT(b.start, b.end);
    if (b.term != Terminator::kFallThrough) {
      ASSERT_GE(b.branch, b.start);
      ASSERT_LT(b.branch, b.end);
    }
    if (i + 1 < p.blocks.size() && p.blocks[i + 1].function == b.function) {
      ASSERT_EQ(p.blocks[i + 1].start, b.end);
    }
    ASSERT_EQ(p.BlockAt(b.start), static_cast<int64_t>(i));
    ASSERT_EQ(p.BlockAt(b.end - 1), static_cast<int64_t>(i));
  }
  for (const auto& f : p.functions) {
    EXPECT_EQ(p.blocks[f.entry].start % 16, 0u);
  }
}

TEST(SynthConsistency, LoopLatchesRunTheirTripCounts) {
  // One function, one fixed-count loop with nothing else: the back-edge is taken trips-1 times.
  WorkloadSpec s;
  s.functions = 1;
  s.statements = 1;
  s.diamonds = 0;
  s.loop_prob = 1.0;
  s.call_prob = s.indirect_call_prob = s.switch_prob = 0;
  s.max_loop_nesting = 1;
  s.mean_trip_count = 10;
  for (uint64_t seed = 1; seed < 50; ++seed) {
    s.seed = seed;
    auto p = GenerateProgram(s);
    ASSERT_TRUE(p.ok());
    if (p->loops[0].empty() || p->loops[0][0].jitter != 0) continue;
    uint32_t trips = p->loops[0][0].mean_trips;
    Executor ex(*p, seed);
    std::vector<BranchEvent> ev;
    ex.Run(1000, &ev);
    // Pattern: (trips-1) taken backward conditionals, one not-taken one, then main's back jump
    // (for each of the loops in main's body).
    size_t run = 0;
    for (const auto& e : ev) {
      if (e.kind != BranchKind::kConditional) continue;
      if (e.taken) {
        ++run;
      } else {
        EXPECT_EQ(run + 1, trips);
        run = 0;
      }
    }
    return;
  }
  FAIL() << "no seed produced a fixed-count loop";
}

TEST(SynthStream, BatchesCarryThreadAndGap) {
  auto stream = SyntheticStream::Create(*BundledWorkload("loops", 1), 7, 8);
  ASSERT_TRUE(stream.ok());
  BranchBatch b;
  stream->NextBatch(100, &b);
  EXPECT_EQ(b.pid, 7u);
  EXPECT_EQ(b.tid, 8u);
  EXPECT_TRUE(b.gap_before);
  EXPECT_EQ(b.events.size(), 100u);
  auto first = b.events;
  stream->NextBatch(50, &b);
  EXPECT_FALSE(b.gap_before);
  EXPECT_EQ(b.events.size(), 50u);
  EXPECT_GT(b.time_ns, 0u);
  // The second batch continues where the first stopped.
  auto whole = RunWorkload(*BundledWorkload("loops", 1), 150);
  EXPECT_EQ(std::vector<BranchEvent>(whole.begin(), whole.begin() + 100), first);
  EXPECT_EQ(std::vector<BranchEvent>(whole.begin() + 100, whole.end()), b.events);
}

TEST(SynthStream, WritesAReadablePbsFile) {
  std::string path = ::testing::TempDir() + "synth_" + std::to_string(getpid()) + ".pbs";
  auto spec = *BundledWorkload("branchy", 4);
  ASSERT_TRUE(WriteSyntheticPbs(spec, 2500, path, 1000).ok());
  auto contents = ReadPbsFile(path);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  ASSERT_EQ(contents->batches.size(), 3u);
  EXPECT_TRUE(contents->batches[0].gap_before);
  EXPECT_FALSE(contents->batches[1].gap_before);
  EXPECT_EQ(contents->branch_count(), 2500u);
  std::vector<BranchEvent> all;
  for (const auto& b : contents->batches) all.insert(all.end(), b.events.begin(), b.events.end());
  EXPECT_EQ(all, RunWorkload(spec, 2500));
  bool named = false;
  for (const auto& m : contents->meta) named |= m.key == "workload" && m.value == "branchy";
  EXPECT_TRUE(named);
  std::remove(path.c_str());
}

TEST(SynthMetrics, MispredictionsFollowBiasAndCyclesIncludeThePenalty) {
  auto spec = *BundledWorkload("branchy", 1);
  auto ev = RunWorkload(spec, 50000);
  size_t mispredicted = 0, conditional = 0;
  for (const auto& e : ev) {
    if (e.kind == BranchKind::kReturn || e.kind == BranchKind::kDirectCall ||
        e.kind == BranchKind::kDirectJump) {
      EXPECT_FALSE(e.mispredicted);
    }
    if (e.mispredicted) {
      EXPECT_GE(e.cycles, e.instructions + 20u);
    }
    conditional += e.kind == BranchKind::kConditional;
    mispredicted += e.mispredicted;
  }
  EXPECT_GT(mispredicted, 0u);
  EXPECT_LT(mispredicted, conditional / 2);
  spec.synthesize_metrics = false;
  for (const auto& e : RunWorkload(spec, 1000)) {
    EXPECT_EQ(e.cycles, 0u);
    EXPECT_FALSE(e.mispredicted);
  }
}

}  // namespace
}  // namespace pathprof::synth
