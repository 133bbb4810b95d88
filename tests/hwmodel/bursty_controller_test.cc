#include "pathprof/hwmodel/bursty_controller.h"

#include <gtest/gtest.h>

#include "test_streams.h"

namespace pathprof::hwmodel {
namespace {

using testing::Call;
using testing::Cond;

// 'T' = tick (a call), 'b' = tick (taken back-edge), 'n' = neither (forward conditional).
std::vector<BranchEvent> Stream(std::string_view pattern) {
  std::vector<BranchEvent> out;
  uint64_t pc = 0x1000;
  for (char c : pattern) {
    pc += 0x10;
    if (c == 'T') out.push_back(Call(pc, 0x9000));
    if (c == 'b') out.push_back(Cond(pc, 0x1000, true));
    if (c == 'n') out.push_back(Cond(pc, pc + 8, true));
  }
  return out;
}

TEST(BurstyControllerTest, HandComputedWindows) {
  auto bc = BurstyController::Create(BurstyConfig{2, 3});
  ASSERT_TRUE(bc.ok());
  //                       index: 0123456789........
  const auto events = Stream("nTnbnnTTnbnTTnbTn");
  // Off: ticks at 1, 3 -> the 2nd (index 3) ends the skip. Window from 4: ticks 6, 7, 9 -> the
  // 3rd (index 9) is its last event: [4, 10). Off: ticks 11, 12; window from 13: ticks 14, 15,
  // then the stream ends: [13, 17).
  EXPECT_EQ(bc->WindowRanges(events), (std::vector<EventRange>{{4, 10}, {13, 17}}));
  EXPECT_EQ(bc->stats().windows, 2u);
  EXPECT_EQ(bc->stats().sampled_events, 10u);
  EXPECT_EQ(bc->stats().ticks, 9u);
  EXPECT_TRUE(bc->sampling());
}

TEST(BurstyControllerTest, ApplyCutsBatchesIntoWindowBatches) {
  const auto events = Stream("nTnbnnTTnbnTTnbTn");
  BranchBatch a, b;
  a.tid = 7;
  a.events.assign(events.begin(), events.begin() + 15);
  b.tid = 7;
  b.gap_before = false;
  b.events.assign(events.begin() + 15, events.end());

  auto bc = BurstyController::Create(BurstyConfig{2, 3});
  ASSERT_TRUE(bc.ok());
  std::vector<BranchBatch> out;
  bc->Apply(a, &out);
  bc->Apply(b, &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].events, std::vector<BranchEvent>(events.begin() + 4, events.begin() + 10));
  EXPECT_TRUE(out[0].gap_before);
  EXPECT_TRUE(out[0].window);
  EXPECT_EQ(out[0].tid, 7u);
  EXPECT_EQ(out[1].events, std::vector<BranchEvent>(events.begin() + 13, events.begin() + 15));
  EXPECT_TRUE(out[1].gap_before);
  // The window continues into the next input batch: no gap.
  EXPECT_EQ(out[2].events, std::vector<BranchEvent>(events.begin() + 15, events.end()));
  EXPECT_FALSE(out[2].gap_before);

  // The same with a gap between the input batches: the open window is cut.
  auto cut = BurstyController::Create(BurstyConfig{2, 3});
  ASSERT_TRUE(cut.ok());
  b.gap_before = true;
  out.clear();
  cut->Apply(a, &out);
  cut->Apply(b, &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[2].gap_before);
  EXPECT_EQ(cut->stats().windows_cut, 1u);
  EXPECT_EQ(cut->stats().windows, 3u);
}

TEST(BurstyControllerTest, ZeroIntervalGivesBackToBackWindows) {
  auto bc = BurstyController::Create(BurstyConfig{0, 1});
  ASSERT_TRUE(bc.ok());
  EXPECT_EQ(bc->WindowRanges(Stream("nTnbn")), (std::vector<EventRange>{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_FALSE(BurstyController::Create(BurstyConfig{5, 0}).ok());
  EXPECT_DOUBLE_EQ((BurstyConfig{9, 1}.SamplingPeriod()), 10.0);
}

}  // namespace
}  // namespace pathprof::hwmodel
