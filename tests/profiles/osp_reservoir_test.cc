#include "pathprof/profiles/osp_reservoir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace pathprof::profiles {
namespace {

std::unique_ptr<OspReservoir> MakeReservoir(OspConfig config) {
  auto r = OspReservoir::Create(std::move(config));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

uint64_t CountOf(const OspReservoir& r, const std::vector<BlockId>& canonical) {
  for (const OspSample& s : r.Snapshot().samples) {
    if (s.blocks == canonical) return s.count;
  }
  return 0;
}

TEST(OspReservoirTest, InitialFrequencyFollowsEquation213WithFloor) {
  OspConfig c;
  c.max_entries = 1000;
  c.expected_gain = 5;
  c.expected_blocks = 1e6;
  EXPECT_DOUBLE_EQ(InitialSamplingFrequency(c), 200.0);  // n / (m G)
  c.expected_blocks = 1000;
  c.min_f = 4;
  EXPECT_DOUBLE_EQ(InitialSamplingFrequency(c), 4.0);  // 0.2 is below the floor
  EXPECT_DOUBLE_EQ(MakeReservoir(c)->f(), 4.0);
}

TEST(OspReservoirTest, RejectsBadConfigurationWithReasons) {
  auto expect_bad = [](OspConfig c, const std::string& needle) {
    auto r = OspReservoir::Create(std::move(c));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  OspConfig c;
  c.max_entries = 0;
  expect_bad(c, "max_entries");
  c = {};
  c.raise_factor = 1;
  expect_bad(c, "raise_factor");
  c = {};
  c.min_f = 0.5;
  expect_bad(c, "min_f");
  c = {};
  c.reject_by_cost = true;
  expect_bad(c, "block_cost");
  c = {};
  c.expected_gain = 0;
  expect_bad(c, "expected_gain");
}

// Raising f thins every count binomially (keep f/f'), and late arrivals that started under an
// older f are thinned alike, so count * f stays an unbiased estimate of the true count. Over R
// independent reservoirs the mean estimate must lie within 4 standard errors of the truth, the
// standard error taken from the spread of the R estimates themselves.
TEST(OspReservoirTest, ResamplingKeepsEstimatesUnbiased) {
  const std::vector<BlockId> hot = {0x10, 0x20}, warm = {0x30, 0x40}, mild = {0x50, 0x60};
  std::vector<std::vector<BlockId>> items;
  for (int i = 0; i < 600; ++i) items.push_back(hot);
  for (int i = 0; i < 150; ++i) items.push_back(warm);
  for (int i = 0; i < 40; ++i) items.push_back(mild);
  for (BlockId i = 0; i < 800; ++i) items.push_back({0x1000 + 16 * i, 0x90000 + 16 * i});
  std::shuffle(items.begin(), items.end(), std::mt19937_64(99));
  const double total = static_cast<double>(items.size());

  constexpr int kRuns = 200;
  std::vector<double> est_hot, est_warm, est_mild, est_total;
  uint64_t resamples = 0;
  for (int run = 0; run < kRuns; ++run) {
    OspConfig c;
    c.max_entries = 8;
    c.expected_blocks = 0;  // f starts at its floor, 1: every item is kept until m is reached
    c.seed = 1000 + run;
    auto r = MakeReservoir(c);
    for (const auto& item : items) {
      r->Insert(item, r->f());
      if (run == 0) {
        ASSERT_LE(r->stats().entries, 8u);
      }
    }
    const OspStats s = r->stats();
    resamples += s.resamples;
    est_hot.push_back(CountOf(*r, hot) * s.f);
    est_warm.push_back(CountOf(*r, warm) * s.f);
    est_mild.push_back(CountOf(*r, mild) * s.f);
    est_total.push_back(s.sample_total * s.f);
  }
  EXPECT_GT(resamples, kRuns * 10u);  // f really was raised, many times per run
  auto check = [&](const std::vector<double>& est, double truth, const char* what) {
    double mean = 0, var = 0;
    for (double e : est) mean += e / kRuns;
    for (double e : est) var += (e - mean) * (e - mean) / (kRuns - 1);
    const double stderr_of_mean = std::sqrt(var / kRuns);
    EXPECT_GT(stderr_of_mean, 0) << what;
    EXPECT_NEAR(mean, truth, 4 * stderr_of_mean) << what;
  };
  check(est_hot, 600, "hot");
  check(est_warm, 150, "warm");
  check(est_mild, 40, "mild");
  check(est_total, total, "total");
}

TEST(OspReservoirTest, AgingThinsCountsByTheKeepFactor) {
  OspConfig c;
  c.expected_blocks = 0;
  auto r = MakeReservoir(c);
  for (int i = 0; i < 4000; ++i) r->Insert(std::vector<BlockId>{1, 2}, 1);
  EXPECT_FALSE(r->Age(0).ok());
  EXPECT_FALSE(r->Age(1.5).ok());
  ASSERT_TRUE(r->Age(1).ok());
  EXPECT_EQ(CountOf(*r, {1, 2}), 4000u);
  ASSERT_TRUE(r->Age(0.5).ok());
  // Binomial(4000, 0.5): standard deviation 31.6.
  EXPECT_NEAR(static_cast<double>(CountOf(*r, {1, 2})), 2000, 4 * 31.6);
  EXPECT_EQ(r->stats().agings, 2u);  // the two valid calls
}

TEST(OspReservoirTest, RejectionByCostFavoursExpensiveSubpaths) {
  OspConfig c;
  c.expected_blocks = 0;
  c.block_cost = [](BlockId b) { return b == 0xE ? 4.0 : 1.0; };
  c.max_block_cost = 4;
  c.reject_by_cost = true;
  auto r = MakeReservoir(c);
  for (int i = 0; i < 4000; ++i) {
    r->Insert(std::vector<BlockId>{0xE, 0xE}, 1);  // mean cost 4: always kept
    r->Insert(std::vector<BlockId>{0xC, 0xC}, 1);  // mean cost 1: kept with probability 1/4
  }
  EXPECT_EQ(CountOf(*r, {0xE, 0xE}), 4000u);
  // Binomial(4000, 0.25): standard deviation 27.4.
  EXPECT_NEAR(static_cast<double>(CountOf(*r, {0xC, 0xC})), 1000, 4 * 27.4);
  const OspStats s = r->stats();
  EXPECT_EQ(s.samples_rejected_by_cost, 4000 - CountOf(*r, {0xC, 0xC}));
  for (const OspSample& smp : r->Snapshot().samples) {
    EXPECT_DOUBLE_EQ(smp.acceptance, smp.blocks[0] == 0xE ? 1.0 : 0.25);
    EXPECT_DOUBLE_EQ(smp.block_cost_sum, smp.blocks[0] == 0xE ? 8.0 : 2.0);
  }
}

TEST(OspReservoirTest, XorEncodingKeepsFirstSequenceForReports) {
  OspConfig c;
  c.expected_blocks = 0;
  c.encoding = OspEncoding::kXor;
  auto r = MakeReservoir(c);
  r->Insert(std::vector<BlockId>{0xa, 0xb, 0xb, 0xc}, 1);
  r->Insert(std::vector<BlockId>{0xa, 0xd, 0xd, 0xc}, 1);  // the paper's collision
  const OspSnapshot snap = r->Snapshot();
  ASSERT_EQ(snap.samples.size(), 1u);
  EXPECT_EQ(snap.samples[0].count, 2u);
  EXPECT_EQ(snap.samples[0].blocks, (std::vector<BlockId>{0xa, 0xb, 0xb, 0xc}));
  EXPECT_EQ(snap.stats.blocks_stored, 4u);
}

}  // namespace
}  // namespace pathprof::profiles
