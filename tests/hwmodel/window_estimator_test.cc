#include "pathprof/hwmodel/window_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "pathprof/hwmodel/exact_path_profile.h"
#include "synthetic_stream.h"
#include "test_streams.h"

namespace pathprof::hwmodel {
namespace {

using testing::Cond;
using testing::P;

TEST(WindowEstimatorTest, WeightsOneWholePathByWindowPositions) {
  WindowEstimatorConfig c;
  c.sampling_period = 1.5;
  auto est = WindowEstimator::Create(c);
  ASSERT_TRUE(est.ok());
  // W = 4 taken branches. The back-edge at 0 starts the path (taken ordinal 1); it ends at the
  // back-edge with ordinal 3: k = 3, seen whole by 4 - 3 + 1 = 2 of 4 positions -> weight
  // 1.5 * 4 / 2 = 3. The base before it and the path open at the end are partial.
  const std::vector<BranchEvent> window = {Cond(0x2030, 0x2000, true), Cond(0x2004, 0x2010, true),
                                           Cond(0x2030, 0x2000, true), Cond(0x2004, 0x2010, true)};
  est->AddWindow(window);
  const PathEstimate e = est->Estimate(P(0x2000, 2, 0b11));
  EXPECT_DOUBLE_EQ(e.estimate, 3.0);
  EXPECT_EQ(e.observations, 1u);
  EXPECT_EQ(est->stats().whole_paths, 1u);
  EXPECT_EQ(est->stats().stack.unknown_start, 1u);
  est->AddWindow(std::vector<BranchEvent>{});  // reset drops the open path
  EXPECT_EQ(est->stats().stack.truncated, 1u);
  EXPECT_EQ(est->stats().empty_windows, 1u);
}

// Time-uniform window starts (ptrace bursts): a fast loop A (2 instructions per iteration, one
// taken back-edge) and a slow loop B (8 per iteration) each run 1000 iterations, so B retires
// 8000 instructions to A's 2000 and, with a start every S = 1000 instructions, receives 8 windows
// to A's 2. Each W = 4 window holds 3 whole one-iteration paths (taken span 2, seen whole by
// 3 of 4 positions). Per-branch weighting believes B ran 4x as often; density weighting gives
// both their true 1000: A: 2 windows * 3 paths * (1000 / (4 * 2)) * 4 / 3 = 1000,
// B: 8 * 3 * (1000 / (4 * 8)) * 4 / 3 = 1000.
TEST(WindowEstimatorTest, InstructionUniformStartsAreWeightedByBranchDensity) {
  std::vector<BranchEvent> a(4, Cond(0x1010, 0x1000, true, 2));
  std::vector<BranchEvent> b(4, Cond(0x2010, 0x2000, true, 8));
  a[0].instructions = 1;  // the partial gap before the first taken branch does not count
  b[0].instructions = 5;
  WindowEstimatorConfig c;
  c.starts = WindowStarts::kInstructions;
  c.sampling_period = 1000;
  auto est = WindowEstimator::Create(c);
  ASSERT_TRUE(est.ok());
  WindowEstimatorConfig plain;
  plain.sampling_period = 1000.0 / 4;
  auto naive = WindowEstimator::Create(plain);
  ASSERT_TRUE(naive.ok());
  for (int i = 0; i < 2; ++i) {
    est->AddWindow(a);
    naive->AddWindow(a);
  }
  for (int i = 0; i < 8; ++i) {
    est->AddWindow(b);
    naive->AddWindow(b);
  }
  EXPECT_DOUBLE_EQ(est->Estimate(P(0x1000, 1, 0b1)).estimate, 1000.0);
  EXPECT_DOUBLE_EQ(est->Estimate(P(0x2000, 1, 0b1)).estimate, 1000.0);
  EXPECT_EQ(est->Estimate(P(0x1000, 1, 0b1)).observations, 6u);
  EXPECT_DOUBLE_EQ(naive->Estimate(P(0x2000, 1, 0b1)).estimate,
                   4 * naive->Estimate(P(0x1000, 1, 0b1)).estimate);
  // A window without instruction counts (or one taken branch) has no density: counted, unused.
  est->AddWindow(std::vector<BranchEvent>(4, Cond(0x3010, 0x3000, true)));
  est->AddWindow(std::vector<BranchEvent>{Cond(0x3010, 0x3000, true, 4)});
  EXPECT_EQ(est->stats().windows_without_density, 2u);
  EXPECT_EQ(est->Estimate(P(0x3000, 1, 0b1)).observations, 0u);
}

TEST(WindowEstimatorTest, TimeUniformStartsAreWeightedByDuration) {
  // Both loops retire 2 instructions per iteration, but b's iterations take 4x as long (a
  // dependency chain), so interrupts uniform in time land in b 4x as often: 2 windows of a, 8 of
  // b, for the same 1000 iterations each. Only the durations can tell.
  const std::vector<BranchEvent> a(4, Cond(0x1010, 0x1000, true, 2));
  const std::vector<BranchEvent> b(4, Cond(0x2010, 0x2000, true, 2));
  std::vector<double> da(4, 2.0), db(4, 8.0);
  da[0] = 0.5;  // the partial gap before the first taken branch does not count
  db[0] = 7;
  WindowEstimatorConfig c;
  c.starts = WindowStarts::kTime;
  c.sampling_period = 1000;
  auto est = WindowEstimator::Create(c);
  ASSERT_TRUE(est.ok());
  WindowEstimatorConfig by_instructions = c;
  by_instructions.starts = WindowStarts::kInstructions;
  auto naive = WindowEstimator::Create(by_instructions);
  ASSERT_TRUE(naive.ok());
  for (int i = 0; i < 2; ++i) {
    est->AddWindow(a, da);
    naive->AddWindow(a);
  }
  for (int i = 0; i < 8; ++i) {
    est->AddWindow(b, db);
    naive->AddWindow(b);
  }
  EXPECT_DOUBLE_EQ(est->Estimate(P(0x1000, 1, 0b1)).estimate, 1000.0);
  EXPECT_DOUBLE_EQ(est->Estimate(P(0x2000, 1, 0b1)).estimate, 1000.0);
  EXPECT_DOUBLE_EQ(naive->Estimate(P(0x2000, 1, 0b1)).estimate,
                   4 * naive->Estimate(P(0x1000, 1, 0b1)).estimate);
  // Without durations (or with none known) a window's density is unknown: counted, unused.
  est->AddWindow(a);
  est->AddWindow(a, std::vector<double>(4, 0.0));
  EXPECT_EQ(est->stats().windows_without_density, 2u);
  EXPECT_EQ(est->Estimate(P(0x1000, 1, 0b1)).observations, 6u);
}

TEST(WindowEstimatorTest, SlicesLbrLikeWindows) {
  // Taken at indices 0, 2, 3, 5, 6. W = 2, spacing 3: ordinals 1-2 and 4-5; the not-taken
  // branch between ordinals 1 and 2 belongs to the first, the one at 4 lies between windows.
  const std::vector<BranchEvent> events = {Cond(0x10, 0x20, true),  Cond(0x24, 0x26, false),
                                           Cond(0x30, 0x40, true),  Cond(0x44, 0x50, true),
                                           Cond(0x54, 0x56, false), Cond(0x60, 0x70, true),
                                           Cond(0x74, 0x80, true)};
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(SliceTakenWindows(events, 2, 3, 0), (Ranges{{0, 3}, {5, 7}}));
  EXPECT_EQ(SliceTakenWindows(events, 2, 3, 1), (Ranges{{2, 4}}));
  EXPECT_EQ(SliceRandomTakenWindows(events, 2, 1.0, 9), (Ranges{{0, 3}, {2, 4}, {3, 6}, {5, 7}}));
}

TEST(WindowEstimatorTest, ConvergesToExactCountsWithinItsInterval) {
  const auto stream = testing::SyntheticStream(42).Generate(400000);
  // Exact counts (and mean taken span) from the whole stream.
  auto full = PathStack::Create(BallLarusPreset());
  ASSERT_TRUE(full.ok());
  ExactPathProfile exact;
  std::unordered_map<PathDescriptor, double, PathDescriptorHash> span_sum;
  for (const BranchEvent& e : stream) {
    full->Process(e, [&](const CompletedPath& c) {
      exact.Record(c);
      span_sum[c.path] += static_cast<double>(c.TakenSpan());
    });
  }

  constexpr uint64_t kW = 16, kSpacing = 40;
  WindowEstimatorConfig config;
  config.sampling_period = static_cast<double>(kSpacing) / kW;
  config.z = 3;
  auto est = WindowEstimator::Create(config);
  ASSERT_TRUE(est.ok());
  for (const auto& [begin, end] : SliceRandomTakenWindows(stream, kW, kSpacing, 7)) {
    est->AddWindow(std::span<const BranchEvent>(stream).subspan(begin, end - begin));
  }
  EXPECT_GT(est->stats().windows, 3000u);

  const auto top = exact.Sorted(Metric::kCount);
  ASSERT_GE(top.size(), 10u);
  const PathDescriptor* long_path = nullptr;
  double long_span = 0;
  for (size_t i = 0; i < 10; ++i) {
    const auto& [path, m] = top[i];
    const double truth = static_cast<double>(m.count);
    const PathEstimate e = est->Estimate(path);
    EXPECT_GT(e.std_error, 0) << FormatPathDescriptor(path);
    EXPECT_LE(e.ci_low, truth) << FormatPathDescriptor(path) << " estimate " << e.estimate;
    EXPECT_GE(e.ci_high, truth) << FormatPathDescriptor(path) << " estimate " << e.estimate;
    const double mean_span = span_sum[path] / truth;
    if (mean_span > long_span) {
      long_span = mean_span;
      long_path = &top[i].first;
    }
  }
  // Without the W / (W - k + 1) correction a long path is badly under-counted.
  ASSERT_NE(long_path, nullptr);
  ASSERT_GE(long_span, 6.0);
  const PathEstimate e = est->Estimate(*long_path);
  const double naive = static_cast<double>(e.observations) * config.sampling_period;
  const double truth = static_cast<double>(exact.Get(*long_path).count);
  EXPECT_LT(naive, e.ci_low) << "span " << long_span;
  EXPECT_LT(naive, 0.8 * truth);
  EXPECT_NEAR(e.estimate, truth, 0.1 * truth);
}

// Ragged windows: every taken branch of the stream starts a window of at most 16 taken
// branches, cut before the first "cold" branch (0x402010, the diamond in the called function:
// as if its condition read memory a snapshot did not hold), so a window's length depends on
// where it starts, as a snapshot window's does. Traversals that hold the cold branch are seen
// by no window; every other one is seen whole by the window that starts at its first taken
// branch, so counted_prefix = 1 gives exactly their number. The W - k + 1 weight does not:
// windows that start earlier end at the same cold branch, so paths just after it are seen by
// fewer positions than their window's W - k + 1 and paths just before it by more.
TEST(WindowEstimatorTest, RaggedWindowsCountEachCleanTraversalOnceWithAPrefixOfOne) {
  constexpr uint64_t kCold = 0x402010;
  constexpr uint32_t kCap = 16;
  const auto stream = testing::SyntheticStream(7).Generate(200000);
  std::vector<size_t> taken_index;  // taken_index[t - 1]: event index of taken ordinal t
  std::vector<size_t> cold_before;  // cold_before[i]: cold events among [0, i)
  cold_before.push_back(0);
  for (size_t i = 0; i < stream.size(); ++i) {
    if (stream[i].taken) taken_index.push_back(i);
    cold_before.push_back(cold_before.back() + (stream[i].from == kCold ? 1 : 0));
  }
  // Truth: all traversals, and those no cold branch interrupts (from the event of their first
  // taken branch through that of their last, what a window must hold).
  auto full = PathStack::Create(BallLarusPreset());
  ASSERT_TRUE(full.ok());
  ExactPathProfile exact;
  std::unordered_map<PathDescriptor, double, PathDescriptorHash> clean;
  for (const BranchEvent& e : stream) {
    full->Process(e, [&](const CompletedPath& c) {
      exact.Record(c);
      if (c.first_taken == 0 || c.last_taken > taken_index.size()) return;
      const size_t begin = taken_index[c.first_taken - 1], end = taken_index[c.last_taken - 1];
      if (cold_before[end + 1] == cold_before[begin] && c.TakenSpan() <= kCap) clean[c.path] += 1;
    });
  }
  auto make = [&](uint32_t prefix) {
    WindowEstimatorConfig config;
    config.sampling_period = 1.0 / kCap;  // a window starts at every taken branch
    config.counted_prefix = prefix;
    config.window_cap = kCap;
    auto est = WindowEstimator::Create(config);
    EXPECT_TRUE(est.ok()) << est.status().ToString();
    return std::move(*est);
  };
  WindowEstimator prefix1 = make(1), prefix4 = make(4), own_length = make(0);
  uint64_t cut = 0;
  for (auto [begin, end] : SliceTakenWindows(stream, kCap, 1, 0)) {
    for (size_t i = begin; i < end; ++i)
      if (stream[i].from == kCold) {
        end = i;
        cut += 1;
        break;
      }
    const auto window = std::span<const BranchEvent>(stream).subspan(begin, end - begin);
    prefix1.AddWindow(window);
    prefix4.AddWindow(window);
    own_length.AddWindow(window);
  }
  EXPECT_GT(cut, 10000u) << "the cold branch must cut many windows";
  EXPECT_EQ(prefix1.stats().windows, own_length.stats().windows);
  EXPECT_GT(prefix1.stats().beyond_prefix, 0u);

  const auto top = exact.Sorted(Metric::kCount);
  ASSERT_GE(top.size(), 10u);
  double worst_own = 0, worst_prefix4 = 0;
  size_t with_cold = 0;
  for (size_t i = 0; i < 10; ++i) {
    const PathDescriptor& path = top[i].first;
    const double truth = clean.count(path) ? clean[path] : 0.0;
    // One window holds each clean traversal at offset 0: its estimate is exactly their number
    // (window edges aside: the stream's last 15 taken branches start short windows).
    EXPECT_NEAR(prefix1.Estimate(path).estimate, truth, 2.0) << FormatPathDescriptor(path);
    if (truth == 0) {
      with_cold += 1;  // it holds the cold branch: no window can see it
      EXPECT_EQ(own_length.Estimate(path).observations, 0u);
      continue;
    }
    worst_own = std::max(worst_own, std::abs(own_length.Estimate(path).estimate - truth) / truth);
    worst_prefix4 =
        std::max(worst_prefix4, std::abs(prefix4.Estimate(path).estimate - truth) / truth);
  }
  EXPECT_GT(with_cold, 0u) << "some hot path holds the cold branch";
  std::printf("worst relative error over the top 10: own length %.1f%%, prefix 4 %.1f%%\n",
              100 * worst_own, 100 * worst_prefix4);
  EXPECT_GT(worst_own, 0.15) << "the W - k + 1 weight is biased on ragged windows";
  EXPECT_LT(worst_prefix4, worst_own);
}

// counted_prefix without the cap it is weighed against is a configuration error.
TEST(WindowEstimatorTest, CountedPrefixNeedsTheWindowCap) {
  WindowEstimatorConfig config;
  config.counted_prefix = 4;
  auto est = WindowEstimator::Create(config);
  ASSERT_FALSE(est.ok());
  EXPECT_NE(est.status().message().find("window_cap"), std::string::npos);
}

}  // namespace
}  // namespace pathprof::hwmodel
