#include "pathprof/profiles/accuracy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace pathprof::profiles {
namespace {

using P = WeightedProfile<std::string>;

TEST(Overlap, HandComputedExample) {
  P a = {{"a", 50}, {"b", 30}, {"c", 20}};
  P b = {{"a", 40}, {"b", 40}, {"d", 20}};
  // min(50,40) + min(30,40) + 0 + 0 = 70 of 100.
  EXPECT_DOUBLE_EQ(OverlapPercent(a, b), 70.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(b, a), 70.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(a, a), 100.0);
}

TEST(Overlap, UsesSharesNotRawWeights) {
  // Same shape, ten times the counts: identical shares.
  P a = {{"x", 3}, {"y", 1}};
  P b = {{"x", 30}, {"y", 10}};
  EXPECT_DOUBLE_EQ(OverlapPercent(a, b), 100.0);
  // Shares 0.75/0.25 vs 0.5/0.5: 0.5 + 0.25.
  P c = {{"x", 5}, {"y", 5}};
  EXPECT_DOUBLE_EQ(OverlapPercent(a, c), 75.0);
}

TEST(Overlap, DuplicatesAddUpAndJunkWeightsCountAsZero) {
  P a = {
      {"x", 20}, {"y", 50}, {"x", 30}, {"z", -5}, {"w", std::numeric_limits<double>::quiet_NaN()}};
  P b = {{"x", 50}, {"y", 50}};
  EXPECT_DOUBLE_EQ(OverlapPercent(a, b), 100.0);
}

TEST(Overlap, ExplicitTotalsChargeUnseenMass) {
  // An estimate that saw only x (40 of a true 100 paths) while the exact profile is x:40 y:60.
  WeightedProfile<uint64_t> exact = {{1, 40}, {2, 60}};
  WeightedProfile<uint64_t> estimate = {{1, 40}};
  EXPECT_DOUBLE_EQ(OverlapPercent(exact, estimate), 40.0);
  // Undercounted: x estimated at 20 of 100. Own-total shares would call it 100% of the
  // estimate (min with 40% = 40); against the true total it is 20%.
  WeightedProfile<uint64_t> under = {{1, 20}};
  EXPECT_DOUBLE_EQ(OverlapPercent(exact, under), 40.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(exact, under, {0, 100}), 20.0);
}

TEST(Overlap, EmptyProfiles) {
  P empty, one = {{"a", 1}};
  EXPECT_DOUBLE_EQ(OverlapPercent(empty, empty), 100.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(empty, one), 0.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(one, empty), 0.0);
}

TEST(HpsOverlap, NinetyPercentMembershipIncludesTheCrossingMember) {
  P a = {{"c", 20}, {"a", 50}, {"b", 30}};
  auto top = TopCoverage(a, 0.9);
  ASSERT_EQ(top.size(), 3u);  // 50+30 = 80 < 90, so c (which crosses 90) is in
  EXPECT_EQ(top[0].first, "a");
  EXPECT_EQ(top[2].first, "c");
  // Exactly 90% reached by a+b: c stays out.
  P b = {{"a", 60}, {"b", 30}, {"c", 10}};
  EXPECT_EQ(TopCoverage(b, 0.9).size(), 2u);
}

TEST(HpsOverlap, CutOffChangesTheAnswer) {
  // a: {x:60, y:35, z:5}; b: {x:60, y:30, z:10}. Full overlap: 60 + 30 + 5 = 95%.
  P a = {{"x", 60}, {"y", 35}, {"z", 5}};
  P b = {{"x", 60}, {"y", 30}, {"z", 10}};
  EXPECT_DOUBLE_EQ(OverlapPercent(a, b), 95.0);
  // 90% members: a -> {x, y} (95 of 100), b -> {x, y} (exactly 90). Contributions within the
  // selections: a x 60/95, y 35/95; b x 60/90, y 30/90.
  // Overlap = 60/95 + 30/90 = 96.491...%
  EXPECT_NEAR(HpsOverlapPercent(a, b), 100.0 * (60.0 / 95 + 30.0 / 90), 1e-9);
  EXPECT_NEAR(HpsOverlapPercent(a, b), 96.4912280701, 1e-6);
  // With every member kept (fraction 1) it is the plain overlap again.
  EXPECT_NEAR(HpsOverlapPercent(a, b, 1.0), 95.0, 1e-9);
}

TEST(HpsOverlap, MemberOutsideOneSelectionContributesNothing) {
  // In a, q is in the tail (outside 90%); in b it is a top member.
  P a = {{"p", 90}, {"q", 10}};
  P b = {{"p", 50}, {"q", 50}};
  // a's selection: {p} alone -> p = 100%. b's: {p, q} -> 50% each. Overlap = min(100, 50) = 50.
  EXPECT_DOUBLE_EQ(HpsOverlapPercent(a, b), 50.0);
  EXPECT_DOUBLE_EQ(OverlapPercent(a, b), 60.0);
}

TEST(DynamicOverlapTest, AveragesWindows) {
  DynamicOverlap d;
  EXPECT_EQ(d.windows(), 0u);
  EXPECT_DOUBLE_EQ(d.AveragePercent(), 0.0);
  d.AddWindow(100);
  d.AddWindow(70);
  d.AddWindow(85);
  EXPECT_EQ(d.windows(), 3u);
  EXPECT_DOUBLE_EQ(d.AveragePercent(), 85.0);
  EXPECT_DOUBLE_EQ(d.MinPercent(), 70.0);
  EXPECT_DOUBLE_EQ(d.MaxPercent(), 100.0);
}

TEST(DynamicOverlapTest, PerWindowProfiles) {
  std::vector<P> exact = {{{"a", 50}, {"b", 30}, {"c", 20}}, {{"a", 1}}};
  std::vector<P> est = {{{"a", 40}, {"b", 40}, {"d", 20}}, {{"b", 1}}, {{"a", 1}}};
  auto d = DynamicOverlapOf(exact, est);
  EXPECT_EQ(d.windows(), 2u);
  EXPECT_DOUBLE_EQ(d.AveragePercent(), 35.0);  // (70 + 0) / 2
}

TEST(RankTableTest, RanksEstimatesAndRelativeErrors) {
  WeightedProfile<uint64_t> exact = {{10, 100}, {20, 80}, {30, 50}, {40, 10}};
  WeightedProfile<uint64_t> est = {{20, 90}, {10, 75}, {40, 12}};
  auto rows = RankTable(exact, est, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].key, 10u);
  EXPECT_EQ(rows[0].exact_rank, 1u);
  EXPECT_EQ(rows[0].estimate_rank, 2u);
  EXPECT_DOUBLE_EQ(rows[0].relative_error, -0.25);
  EXPECT_EQ(rows[1].key, 20u);
  EXPECT_EQ(rows[1].estimate_rank, 1u);
  EXPECT_DOUBLE_EQ(rows[1].relative_error, 0.125);
  EXPECT_EQ(rows[2].key, 30u);
  EXPECT_EQ(rows[2].estimate_rank, 0u);  // absent from the estimate
  EXPECT_DOUBLE_EQ(rows[2].estimate, 0.0);
  EXPECT_DOUBLE_EQ(rows[2].relative_error, -1.0);
  EXPECT_EQ(RankTable(exact, est, 10).size(), 4u);
}

TEST(RankTableTest, TiesBreakByKey) {
  WeightedProfile<uint64_t> exact = {{7, 5}, {3, 5}, {5, 5}};
  auto rows = RankTable(exact, exact, 3);
  EXPECT_EQ(rows[0].key, 3u);
  EXPECT_EQ(rows[1].key, 5u);
  EXPECT_EQ(rows[2].key, 7u);
  EXPECT_EQ(rows[2].estimate_rank, 3u);
}

}  // namespace
}  // namespace pathprof::profiles
