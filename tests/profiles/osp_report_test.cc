#include "pathprof/profiles/osp_report.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "pathprof/profiles/osp_sampler.h"

namespace pathprof::profiles {
namespace {

// Table 4.9 of the paper: sigma_2 (one-sided, 95%) and sigma_4 (one-sided, 80%) for the hottest
// subpath's sample count. The paper rounds ln(1/0.05) = 2.996 to 3, hence the 0.0002 slack.
TEST(OspReportTest, ChernoffBoundMatchesPaperTable49) {
  EXPECT_NEAR(ChernoffRelativeError(27006, 0.95), 0.0149, 0.0002);  // FFT
  EXPECT_NEAR(ChernoffRelativeError(27006, 0.80), 0.0109, 0.0002);
  EXPECT_NEAR(ChernoffRelativeError(109, 0.95), 0.2346, 0.0002);  // JLex
  EXPECT_NEAR(ChernoffRelativeError(109, 0.80), 0.1718, 0.0002);
  EXPECT_NEAR(ChernoffRelativeError(825, 0.95), 0.0853, 0.0002);  // HeapSort
  EXPECT_TRUE(std::isinf(ChernoffRelativeError(0, 0.95)));
}

// Rebuilds the FFT rows of table 4.8 whose length class the paper gives with f = 1000 and the
// untruncated geometric distribution (P(2) = 1/2, P(4) = 1/4, P(16) = 1/16).
class Table48 : public ::testing::Test {
 protected:
  void SetUp() override {
    OspConfig c;
    c.max_entries = 1000;
    c.expected_gain = 1;
    c.expected_blocks = 1e6;  // f = 1e6 / (1000 * 1) = 1000
    c.lengths = *OspLengthDistribution::FromWeights({0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125});
    c.block_cost = [](BlockId b) { return b >= 0x100 ? 3.0 : 1.0; };
    reservoir_ = std::move(OspReservoir::Create(c)).value();
    ASSERT_DOUBLE_EQ(reservoir_->f(), 1000);
    for (int i = 0; i < 27006; ++i) reservoir_->Insert(len4_, 1000);
    for (int i = 0; i < 6479; ++i) reservoir_->Insert(len16_, 1000);
    for (int i = 0; i < 39545; ++i) reservoir_->Insert(len2_, 1000);
  }
  std::unique_ptr<OspReservoir> reservoir_;
  std::vector<BlockId> len2_ = {0x10, 0x20};
  std::vector<BlockId> len4_ = {0x30, 0x40, 0x50, 0x60};
  std::vector<BlockId> len16_ = {0x100, 0x110, 0x120, 0x130, 0x140, 0x150, 0x160, 0x170,
                                 0x180, 0x190, 0x1a0, 0x1b0, 0x1c0, 0x1d0, 0x1e0, 0x1f0};
};

TEST_F(Table48, EstimatedCountsAreThePapers) {
  auto report = BuildOspReport(*reservoir_, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->entries.size(), 3u);
  const auto& e = report->entries;
  EXPECT_EQ(e[0].length, 4u);
  EXPECT_DOUBLE_EQ(e[0].estimated_count, 108024000);  // 27,006 x 1000 x 4
  EXPECT_EQ(e[1].length, 16u);
  EXPECT_DOUBLE_EQ(e[1].estimated_count, 103664000);  // 6,479 x 1000 x 16
  EXPECT_EQ(e[2].length, 2u);
  EXPECT_DOUBLE_EQ(e[2].estimated_count, 79090000);  // 39,545 x 1000 x 2
  EXPECT_NEAR(e[0].relative_error, 0.0149, 0.00005);
  EXPECT_DOUBLE_EQ(e[0].count_low, e[0].estimated_count * (1 - e[0].relative_error));
  EXPECT_DOUBLE_EQ(e[0].count_high, e[0].estimated_count * (1 + e[0].relative_error));
  EXPECT_EQ(e[0].blocks, len4_);
  EXPECT_EQ(report->stats.sample_total, 27006u + 6479 + 39545);
}

TEST_F(Table48, TopKThresholdAndWeightings) {
  OspReportOptions o;
  o.top_k = 1;
  auto top1 = BuildOspReport(*reservoir_, o);
  ASSERT_EQ(top1->entries.size(), 1u);
  EXPECT_EQ(top1->entries[0].length, 4u);

  o.top_k = 0;
  o.threshold = 1e8;  // iceberg: the two above 100 million
  auto iceberg = BuildOspReport(*reservoir_, o);
  ASSERT_EQ(iceberg->entries.size(), 2u);
  EXPECT_EQ(iceberg->entries[1].length, 16u);

  o.threshold = 0;
  o.weighting = OspWeighting::kLength;
  auto by_length = BuildOspReport(*reservoir_, o);
  ASSERT_EQ(by_length->entries.size(), 3u);
  EXPECT_EQ(by_length->entries[0].length, 16u);
  EXPECT_DOUBLE_EQ(by_length->entries[0].metric, 103664000.0 * 16);
  EXPECT_EQ(by_length->entries[2].length, 2u);

  o.weighting = OspWeighting::kCost;  // the length-16 blocks cost 3 each
  auto by_cost = BuildOspReport(*reservoir_, o);
  EXPECT_DOUBLE_EQ(by_cost->entries[0].metric, 103664000.0 * 16 * 3);
  EXPECT_DOUBLE_EQ(by_cost->entries[1].metric, 108024000.0 * 4);

  o.confidence = 1.0;
  EXPECT_FALSE(BuildOspReport(*reservoir_, o).ok());
}

TEST(OspReportTest, CostWeightingNeedsBlockCosts) {
  auto r = std::move(OspReservoir::Create({})).value();
  OspReportOptions o;
  o.weighting = OspWeighting::kCost;
  auto report = BuildOspReport(*r, o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("block_cost"), std::string::npos);
}

// Threads feed their own samplers into one reservoir while the main thread reports; nothing is
// lost: every block fed is accounted for once the samplers are done.
TEST(OspReportTest, ReportsWhileThreadsFeed) {
  OspConfig c;
  c.max_entries = 128;
  c.expected_blocks = 4e5;
  c.expected_gain = 200;
  auto reservoir = std::move(OspReservoir::Create(c)).value();
  constexpr int kThreads = 3;
  constexpr int kBlocks = 150000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      OspThreadSampler sampler(reservoir.get(), static_cast<uint64_t>(t));
      std::vector<BlockId> loop;
      for (int i = 0; i < 6 + t; ++i) loop.push_back(0x1000 * (t + 1) + 16 * i);
      std::vector<BlockId> chunk;
      for (int i = 0; i < kBlocks; ++i) {
        chunk.push_back(loop[static_cast<size_t>(i) % loop.size()]);
        if (chunk.size() == 1000) {
          sampler.FeedBlocks(chunk);
          chunk.clear();
        }
      }
      sampler.FeedBlocks(chunk);
      done.fetch_add(1);
    });
  }
  int reports = 0;
  while (done.load() < kThreads || reports == 0) {
    auto r = BuildOspReport(*reservoir, {});
    ASSERT_TRUE(r.ok());
    EXPECT_LE(r->stats.entries, 128u);
    ++reports;
  }
  for (auto& th : threads) th.join();
  const OspStats s = reservoir->stats();
  EXPECT_EQ(s.blocks_seen, uint64_t{kThreads} * kBlocks);
  EXPECT_GT(s.samples_kept, 0u);
  EXPECT_GT(reports, 0);
}

}  // namespace
}  // namespace pathprof::profiles
