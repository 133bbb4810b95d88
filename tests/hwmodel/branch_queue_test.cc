#include "pathprof/hwmodel/branch_queue.h"

#include <gtest/gtest.h>

#include "test_streams.h"

namespace pathprof::hwmodel {
namespace {

using testing::Cond;

TEST(BranchQueueModelTest, HandComputedStalls) {
  // One branch per cycle needing 3, 1, 1 cycles of profiler time.
  auto q1 = BranchQueueModel::Create(1);
  ASSERT_TRUE(q1.ok());
  // Capacity 1: b0 retires at 1 and is done at 4; b1 (due at 2) waits for it: stall 2,
  // done at 5; b2 (due at 5) retires at once.
  EXPECT_EQ(q1->Add(1, 3), 0u);
  EXPECT_EQ(q1->Add(1, 1), 2u);
  EXPECT_EQ(q1->Add(1, 1), 0u);
  EXPECT_EQ(q1->stall_cycles(), 2u);
  EXPECT_EQ(q1->base_cycles(), 3u);
  EXPECT_NEAR(q1->OverheadPercent(), 200.0 / 3, 1e-9);

  // Capacity 2: b1 enters at 2 (starts at 4, done at 5); b2 (due at 3) waits for b0 (4).
  auto q2 = BranchQueueModel::Create(2);
  ASSERT_TRUE(q2.ok());
  EXPECT_EQ(q2->Add(1, 3), 0u);
  EXPECT_EQ(q2->Add(1, 1), 0u);
  EXPECT_EQ(q2->Add(1, 1), 1u);
  EXPECT_EQ(q2->stall_cycles(), 1u);
  EXPECT_FALSE(BranchQueueModel::Create(0).ok());
}

TEST(BranchQueueSimTest, HandComputedStreamThroughStackAndHpt) {
  // Loop: back-edge, forward, back-edge, forward, back-edge (BL preset, 512x4 HPT).
  const std::vector<BranchEvent> events = {Cond(0x2030, 0x2000, true), Cond(0x2004, 0x2010, true),
                                           Cond(0x2030, 0x2000, true), Cond(0x2004, 0x2010, true),
                                           Cond(0x2030, 0x2000, true)};
  BranchQueueSimConfig sim;
  sim.queue_size = 1;
  sim.cycles_per_branch = 2;
  // Service: b0 update+pop(unknown-start path: no HPT)+push = 3; b1 update = 1;
  // b2 update+pop+push + HPT miss log2(4) = 2 -> 5; b3 = 1; b4 the same path, HPT hit 1 -> 4.
  // Due times 2,4,6,8,10 shifted by stalls: b0 [2,5); b1 due 4 waits to 5 (stall 1), [5,6);
  // b2 due 7, [7,12); b3 due 9 waits to 12 (stall 3), [12,13); b4 due 14, no stall.
  auto report = SimulateBranchQueue(events, BallLarusPreset(), HotPathTableConfig{}, sim);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->branches, 5u);
  EXPECT_EQ(report->paths, 2u);
  EXPECT_EQ(report->busy_cycles, 3u + 1 + 5 + 1 + 4);
  EXPECT_EQ(report->stall_cycles, 4u);
  EXPECT_EQ(report->base_cycles, 10u);
  EXPECT_NEAR(report->overhead_percent, 40.0, 1e-9);
  EXPECT_EQ(report->hpt.hits, 1u);
  EXPECT_EQ(report->hpt.misses, 1u);

  sim.queue_size = 4;  // enough buffering: no stalls
  auto deep = SimulateBranchQueue(events, BallLarusPreset(), HotPathTableConfig{}, sim);
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->stall_cycles, 0u);
}

TEST(BranchQueueSimTest, MissLatencyIsLog2Ways) {
  HotPathTableConfig hpt;
  hpt.entries = 512;
  hpt.ways = 16;
  EXPECT_EQ(ProfilerLatencies::FromHpt(hpt).hpt_miss, 4u);
  hpt.ways = 1;
  EXPECT_EQ(ProfilerLatencies::FromHpt(hpt).hpt_miss, 1u);
  ProfilerLatencies l;
  EXPECT_EQ(l.ServiceCycles(kOpUpdateCount | kOpPop, 0, 1), 1u + 1 + 2);
}

}  // namespace
}  // namespace pathprof::hwmodel
