#include "pathprof/profiles/osp_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "pathprof/profiles/osp_report.h"

namespace pathprof::profiles {
namespace {

// Block start addresses for fig. 1.1 of the paper.
constexpr BlockId kB1 = 0x1010, kB2a = 0x1020, kB2b = 0x1028, kB3 = 0x1030, kB4 = 0x1040,
                  kB5 = 0x1050, kB6 = 0x1060, kB7a = 0x1070;

std::unique_ptr<OspReservoir> MakeReservoir(OspConfig config) {
  auto r = OspReservoir::Create(std::move(config));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

OspConfig SmallConfig() {
  OspConfig c;
  c.max_entries = 64;
  c.expected_blocks = 64 * 8 * 40;  // f = n / (m G) = 40, the paper's "about 1/40"
  c.expected_gain = 8;
  return c;
}

BranchBatch BatchTo(std::vector<BlockId> targets, bool gap) {
  BranchBatch b;
  b.tid = 7;
  b.gap_before = gap;
  for (BlockId t : targets) {
    BranchEvent e;
    e.from = t - 4;
    e.to = t;
    e.kind = BranchKind::kConditional;
    b.events.push_back(e);
  }
  return b;
}

// Section 2.1: skip = 2 passes over blocks 1 and 2a; a length of 4 then samples [3 4 5 6].
TEST(OspSamplerTest, ReproducesThePaperWalkThrough) {
  auto reservoir = MakeReservoir(SmallConfig());
  EXPECT_DOUBLE_EQ(reservoir->f(), 40.0);
  OspThreadSampler sampler(
      reservoir.get(), 1,
      std::make_unique<OspScriptedDraws>(std::deque<uint64_t>{2}, std::deque<uint32_t>{4}));
  EXPECT_EQ(sampler.skip_remaining(), 2u);
  sampler.FeedBlock(kB1);
  sampler.FeedBlock(kB2a);
  EXPECT_EQ(sampler.skip_remaining(), 0u);
  EXPECT_EQ(sampler.in_flight(), 0u);
  sampler.FeedBlock(kB3);
  EXPECT_EQ(sampler.in_flight(), 1u);
  sampler.FeedBlock(kB4);
  sampler.FeedBlock(kB5);
  EXPECT_EQ(reservoir->stats().samples_completed, 0u);
  sampler.FeedBlock(kB6);
  EXPECT_EQ(sampler.in_flight(), 0u);
  sampler.FeedBlock(kB7a);
  sampler.Flush();

  const OspSnapshot snap = reservoir->Snapshot();
  ASSERT_EQ(snap.samples.size(), 1u);
  EXPECT_EQ(snap.samples[0].blocks, (std::vector<BlockId>{kB3, kB4, kB5, kB6}));
  EXPECT_EQ(snap.samples[0].count, 1u);
  EXPECT_EQ(snap.stats.blocks_seen, 7u);
  EXPECT_EQ(snap.stats.samples_started, 1u);
  EXPECT_EQ(snap.stats.samples_kept, 1u);

  // Estimated count = sample count x f / P(4) = 1 x 40 / (1/4 renormalized over 2..1024).
  auto report = BuildOspReport(*reservoir, {});
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->entries.size(), 1u);
  const double p4 = 0.25 / (1 - 1.0 / 1024);
  EXPECT_DOUBLE_EQ(report->entries[0].estimated_count, 40.0 / p4);
}

TEST(OspSamplerTest, BatchFeedSamplesTheSameBlocksAndJumpsOverSkips) {
  auto reservoir = MakeReservoir(SmallConfig());
  OspThreadSampler sampler(
      reservoir.get(), 1,
      std::make_unique<OspScriptedDraws>(std::deque<uint64_t>{2, 1}, std::deque<uint32_t>{4, 2}));
  // Starts at block 3 (after skipping 1, 2a); the next skip (1) is drawn at that start, so
  // block 4 is passed over and block 5 starts [5 6] while [3 4 5 6] is still being recorded.
  sampler.Feed(BatchTo({kB1, kB2a, kB3, kB4}, true));
  sampler.Feed(BatchTo({kB5, kB6, kB7a}, false));
  const OspSnapshot snap = reservoir->Snapshot();
  ASSERT_EQ(snap.samples.size(), 2u);
  std::vector<std::vector<BlockId>> got = {snap.samples[0].blocks, snap.samples[1].blocks};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got[0], (std::vector<BlockId>{kB3, kB4, kB5, kB6}));
  EXPECT_EQ(got[1], (std::vector<BlockId>{kB5, kB6}));
  EXPECT_EQ(snap.stats.blocks_seen, 7u);
}

TEST(OspSamplerTest, GapDropsPartialSubpathsAndCountsThem) {
  auto reservoir = MakeReservoir(SmallConfig());
  OspThreadSampler sampler(
      reservoir.get(), 1,
      std::make_unique<OspScriptedDraws>(std::deque<uint64_t>{0, 5}, std::deque<uint32_t>{8, 2}));
  sampler.Feed(BatchTo({kB1, kB2b, kB3}, true));  // [1 2b 3 ...] of 8 in progress
  EXPECT_EQ(sampler.in_flight(), 1u);
  sampler.Feed(BatchTo({kB4, kB5, kB6, kB7a, kB1, kB2a, kB3}, true));
  // [1 2b 3 4 5 6 7a 1] would cross the gap: dropped, not counted as a subpath.
  EXPECT_EQ(sampler.in_flight(), 0u);
  const OspStats s = reservoir->stats();
  EXPECT_EQ(s.dropped_at_gaps, 1u);
  // The skip (5, drawn at block 1) survives the gap: blocks 2b, 3, 4, 5, 6 are passed over and
  // 7a starts [7a 1], stored as its canonical rotation [1 7a].
  EXPECT_EQ(s.samples_completed, 1u);
  const OspSnapshot snap = reservoir->Snapshot();
  ASSERT_EQ(snap.samples.size(), 1u);
  EXPECT_EQ(snap.samples[0].blocks, (std::vector<BlockId>{kB1, kB7a}));
}

// Random blocks give a new subpath id at almost every sample: the table must stay within m
// after every block while f rises to make room.
TEST(OspSamplerTest, MemoryStaysWithinBoundAtEveryStep) {
  OspConfig c;
  c.max_entries = 16;
  c.expected_blocks = 1000;
  c.expected_gain = 1;
  c.min_f = 2;
  auto reservoir = MakeReservoir(c);
  OspThreadSampler sampler(reservoir.get(), 3);
  std::mt19937_64 rng(11);
  size_t peak = 0;
  for (int i = 0; i < 60000; ++i) {
    sampler.FeedBlock(0x400000 + (rng() % 5000) * 16);
    const OspStats s = reservoir->stats();
    ASSERT_LE(s.entries, 16u) << "after block " << i;
    peak = std::max(peak, s.entries);
  }
  sampler.Flush();
  const OspStats s = reservoir->stats();
  EXPECT_EQ(peak, 16u);
  EXPECT_GT(s.resamples, 0u);
  EXPECT_GT(s.f, 2.0);
  EXPECT_EQ(s.blocks_seen, 60000u);
  EXPECT_GT(s.entries_evicted, 0u);
  EXPECT_GT(s.memory_bytes, 0u);
  EXPECT_EQ(s.samples_started, s.samples_completed + sampler.in_flight());
  EXPECT_EQ(s.samples_completed, s.samples_kept + s.samples_thinned);
}

// End to end through the sampler while f rises mid-stream (starts drawn under an old f and
// subpaths in flight are thinned on the way in): over R seeds the mean estimate of a hot
// subpath must be within 4 standard errors (from the spread of the R estimates) of its exact
// count.
TEST(OspSamplerTest, EstimatesStayUnbiasedWhileFRisesDuringSampling) {
  constexpr BlockId a = 0x100, b = 0x110, c = 0x120, d = 0x130;
  std::mt19937_64 gen(5);
  std::vector<BlockId> stream;
  while (stream.size() < 20000) {
    for (BlockId x : {a, b, c, d}) stream.push_back(x);
    if (gen() % 10 < 3) stream.push_back(0x10000 + 16 * (gen() % 300));  // cold noise
  }
  auto exact = [&](const std::vector<BlockId>& key) {
    uint64_t n = 0;
    const size_t len = key.size();
    for (size_t i = 0; i + len <= stream.size(); ++i) {
      std::vector<BlockId> w(stream.begin() + static_cast<ptrdiff_t>(i),
                             stream.begin() + static_cast<ptrdiff_t>(i + len));
      n += EncodeSubpath(w, OspEncoding::kCanonicalRotation).blocks == key;
    }
    return static_cast<double>(n);
  };
  const std::vector<BlockId> ab = {a, b}, abcd = {a, b, c, d};
  const double truth_ab = exact(ab), truth_abcd = exact(abcd);

  constexpr int kRuns = 120;
  std::vector<double> est_ab, est_abcd;
  uint64_t resamples = 0, starts_thinned = 0;
  for (int run = 0; run < kRuns; ++run) {
    OspConfig cfg;
    cfg.max_entries = 24;
    cfg.expected_blocks = 0;
    cfg.min_f = 2;
    cfg.lengths = *OspLengthDistribution::Geometric(8);
    cfg.seed = 300 + run;
    auto r = MakeReservoir(cfg);
    {
      OspThreadSampler sampler(r.get(), 1);
      for (size_t at = 0; at < stream.size(); at += 100) {
        sampler.FeedBlocks(std::span<const BlockId>(stream).subspan(at, 100));
      }
    }
    const OspStats st = r->stats();
    resamples += st.resamples;
    starts_thinned += st.starts_thinned;
    double n_ab = 0, n_abcd = 0;
    for (const OspSample& smp : r->Snapshot().samples) {
      if (smp.blocks == ab) n_ab = static_cast<double>(smp.count);
      if (smp.blocks == abcd) n_abcd = static_cast<double>(smp.count);
    }
    est_ab.push_back(n_ab * st.f / cfg.lengths.Probability(2));
    est_abcd.push_back(n_abcd * st.f / cfg.lengths.Probability(4));
  }
  EXPECT_GT(resamples, uint64_t{kRuns} * 5);
  EXPECT_GT(starts_thinned, 0u);
  auto check = [&](const std::vector<double>& est, double truth, const char* what) {
    double mean = 0, var = 0;
    for (double e : est) mean += e / kRuns;
    for (double e : est) var += (e - mean) * (e - mean) / (kRuns - 1);
    const double se = std::sqrt(var / kRuns);
    EXPECT_GT(se, 0) << what;
    EXPECT_NEAR(mean, truth, 4 * se) << what << " truth " << truth;
  };
  check(est_ab, truth_ab, "[a b]");
  check(est_abcd, truth_abcd, "[a b c d]");
}

TEST(OspSamplerTest, LengthDistributionDefaultsToPaperGeometric) {
  auto d = OspLengthDistribution::Geometric(1024);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->size(), 10u);
  EXPECT_EQ(d->max_length(), 1024u);
  const double norm = 1 - 1.0 / 1024;
  EXPECT_DOUBLE_EQ(d->Probability(2), 0.5 / norm);
  EXPECT_DOUBLE_EQ(d->Probability(1024), (1.0 / 1024) / norm);
  EXPECT_EQ(d->Probability(3), 0);
  EXPECT_EQ(d->Probability(2048), 0);
  EXPECT_EQ(d->IndexForUniform(0.0), 0u);
  EXPECT_EQ(d->IndexForUniform(0.51), 1u);
  EXPECT_FALSE(OspLengthDistribution::Geometric(1000).ok());
  EXPECT_FALSE(OspLengthDistribution::FromWeights({0, 0}).ok());
  EXPECT_TRUE(OspLengthDistribution::Geometric(65536).ok());
}

TEST(OspSamplerTest, RandomLengthsFollowTheDistribution) {
  OspConfig c = SmallConfig();
  c.expected_blocks = 0;  // f at its floor of 1: every block starts a subpath
  c.lengths = *OspLengthDistribution::Geometric(8);
  c.max_entries = 100000;
  auto reservoir = MakeReservoir(c);
  {
    OspThreadSampler sampler(reservoir.get(), 5);
    std::vector<BlockId> blocks;
    for (int i = 0; i < 70000; ++i) blocks.push_back(0x1000 + 16 * i);  // all subpaths distinct
    sampler.FeedBlocks(blocks);
  }
  // P(2)=4/7, P(4)=2/7, P(8)=1/7; binomial standard deviation ~ 130 of 70000 starts.
  std::map<uint32_t, double> by_length;
  for (const OspSample& s : reservoir->Snapshot().samples) by_length[s.length] += s.count;
  const double n = reservoir->stats().samples_started;
  EXPECT_NEAR(by_length[2], n * 4 / 7, 600);
  EXPECT_NEAR(by_length[4], n * 2 / 7, 600);
  EXPECT_NEAR(by_length[8], n * 1 / 7, 600);
}

}  // namespace
}  // namespace pathprof::profiles
