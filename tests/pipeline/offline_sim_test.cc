#include "pathprof/pipeline/offline_sim.h"

#include <gtest/gtest.h>

#include <vector>

#include "pathprof/pipeline/hpt_sweep.h"
#include "pathprof/pipeline/offline_stream_profiles.h"

namespace pathprof::pipeline {
namespace {

BranchEvent Event(BranchKind kind, uint64_t from, uint64_t to, bool taken = true) {
  BranchEvent e;
  e.from = from;
  e.to = to;
  e.kind = kind;
  e.taken = taken;
  return e;
}

// A loop at 0x1010 whose branch at 0x101a is taken in 3 of every 4 of its 400 iterations: two
// Ball-Larus paths, 0x1010 (taken, back-edge) 300 times and 0x1010 (not taken, back-edge) 100
// times. A back-edge comes first so that the path open at the stream's start (never emitted:
// its start is unknown) ends at once. 801 branches in three batches.
std::vector<BranchBatch> LoopBatches() {
  std::vector<BranchEvent> events = {Event(BranchKind::kConditional, 0x1022, 0x1010)};
  for (int i = 0; i < 400; ++i) {
    const bool taken = i % 4 != 3;
    events.push_back(Event(BranchKind::kConditional, 0x101a, taken ? 0x1020 : 0x101c, taken));
    events.push_back(Event(BranchKind::kConditional, 0x1022, 0x1010));
  }
  std::vector<BranchBatch> batches(3);
  const size_t cuts[] = {0, 301, 601, events.size()};
  for (size_t b = 0; b < 3; ++b) {
    batches[b].tid = 1;
    batches[b].gap_before = b == 0;
    batches[b].events.assign(events.begin() + cuts[b], events.begin() + cuts[b + 1]);
  }
  return batches;
}

NextBatchFn Replay(std::vector<BranchBatch> batches) {
  return [batches = std::move(batches), i = size_t{0}](BranchBatch* out) mutable -> Result<bool> {
    if (i == batches.size()) return false;
    *out = batches[i++];
    return true;
  };
}

TEST(OfflineSim, TableBigEnoughForEveryPathMatchesTheExactProfile) {
  PathEngineSimOptions o;
  o.dynamic_window = 200;
  auto sim = PathEngineSim::Create(o);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  auto r = sim->Run(Replay(LoopBatches()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mode, SimMode::kFull);
  EXPECT_EQ(r->branches, 801u);
  EXPECT_EQ(r->paths_completed, 400u);
  EXPECT_EQ(r->paths_distinct, 2u);
  EXPECT_EQ(r->hpt_valid, 2u);
  ASSERT_EQ(r->top.size(), 2u);
  EXPECT_EQ(r->top[0].path, (hwmodel::PathDescriptor{0x1010, 2, 0b11}));
  EXPECT_EQ(r->top[0].estimate, 300);
  EXPECT_EQ(r->top[0].exact, 300);
  EXPECT_EQ(r->top[0].exact_rank, 1u);
  EXPECT_DOUBLE_EQ(r->top[0].share, 0.75);
  EXPECT_EQ(r->top[1].path, (hwmodel::PathDescriptor{0x1010, 2, 0b10}));
  EXPECT_EQ(r->top[1].exact, 100);
  EXPECT_DOUBLE_EQ(r->overlap, 100);
  EXPECT_DOUBLE_EQ(r->ideal_overlap, 100);
  // Four whole 200-branch windows; the one branch left over is not scored once there is one.
  EXPECT_EQ(r->dynamic_windows, 4u);
  ASSERT_TRUE(r->dynamic_overlap.has_value());
  EXPECT_DOUBLE_EQ(*r->dynamic_overlap, 100);
}

TEST(OfflineSim, RefusedConfigurationFailsBeforeReading) {
  PathEngineSimOptions o;
  o.hpt.entries = 3;  // not a whole number of 4-way sets
  EXPECT_FALSE(PathEngineSim::Create(o).ok());
}

TEST(OfflineSim, StreamErrorsComeBackFromRun) {
  auto sim = PathEngineSim::Create(PathEngineSimOptions{});
  ASSERT_TRUE(sim.ok());
  auto r = sim->Run([](BranchBatch*) -> Result<bool> {
    return Error(ErrorCode::kCorrupt, "bad record at offset 7");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
}

TEST(HptSweep, ScoresEveryGeometryTheTableAcceptsAndSkipsTheRest) {
  HptSweepOptions o;
  o.sizes = {4};
  o.ways = {2, 8};  // 8 ways in 4 entries: refused
  o.dynamic_window = 200;
  auto r = SweepHptGrid(o, Replay(LoopBatches()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->paths_distinct, 2u);
  ASSERT_EQ(r->cells.size(), 1u);
  auto cell = r->Find(4, 2);
  ASSERT_TRUE(cell.has_value());
  EXPECT_DOUBLE_EQ(cell->overlap, 100);
  EXPECT_EQ(cell->dynamic_windows, 4u);
  EXPECT_FALSE(r->Find(4, 8).has_value());
}

// main calls f at 0x1000 three times for every call of g at 0x2000; 40 calls in all.
TEST(StreamProfiles, CallPairsOfTheWholeStreamMatchTheExactCounts) {
  BranchBatch batch;
  batch.tid = 1;
  for (int i = 0; i < 40; ++i) {
    const bool f = i % 4 != 3;
    const uint64_t site = f ? 0x5000 : 0x5010, target = f ? 0x1000 : 0x2000;
    batch.events.push_back(Event(BranchKind::kDirectCall, site, target));
    batch.events.push_back(Event(BranchKind::kReturn, target + 4, site + 5));
  }
  StreamProfileOptions o;
  o.calls = true;
  o.subpaths = true;
  int opened = 0;
  auto r = ProfileStream(o, [&]() -> Result<NextBatchFn> {
    ++opened;
    return Replay({batch});
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(opened, 3) << "subpaths: one pass to size the reservoir, one to sample, one to count";
  EXPECT_EQ(r->branches, 80u);
  EXPECT_EQ(r->calls.calls_exact, 40u);
  ASSERT_EQ(r->calls.pairs.top.size(), 2u);
  EXPECT_EQ(r->calls.pairs.top[0].key, "0x5000->0x1000");
  EXPECT_EQ(r->calls.pairs.top[0].exact, 30);
  EXPECT_EQ(r->calls.pairs.top[0].estimate, 30);
  EXPECT_EQ(r->calls.methods.top[1].key, "0x2000");
  EXPECT_EQ(r->calls.methods.top[1].exact_rank, 2u);
  EXPECT_DOUBLE_EQ(r->calls.pairs.overlap, 100);
  for (const auto& row : r->subpaths.rows) EXPECT_GT(row.exact, 0u) << "reported but never seen";
}

}  // namespace
}  // namespace pathprof::pipeline
