// Exact subpath counts on hand-counted streams.
#include <gtest/gtest.h>

#include <vector>

#include "pathprof/profiles/osp_exact.h"

namespace pathprof::profiles {
namespace {

TEST(OspExactTest, CountsEveryWindowByRotationClass) {
  // 1 2 3 1 2 3 1: length-2 windows 12 23 31 12 23 31 give [1 2] 2, [2 3] 2, [1 3] 2 (31
  // rotated); length-4 windows 1231 2312 3123 1231 fall in three classes: [1 1 2 3] (1231, twice),
  // [1 2 2 3] (2312) and [1 2 3 3] (3123).
  const std::vector<BlockId> s = {1, 2, 3, 1, 2, 3, 1};
  const auto c = CountAllSubpaths(s, 4);
  EXPECT_EQ(c.at({1, 2}), 2u);
  EXPECT_EQ(c.at({2, 3}), 2u);
  EXPECT_EQ(c.at({1, 3}), 2u);
  EXPECT_EQ(c.at({1, 1, 2, 3}), 2u);
  EXPECT_EQ(c.at({1, 2, 2, 3}), 1u);
  EXPECT_EQ(c.at({1, 2, 3, 3}), 1u);
  EXPECT_EQ(c.size(), 6u);
}

TEST(OspExactTest, MatcherAgreesWithTheFullCountAndStopsAtGaps) {
  const std::vector<BlockId> s = {5, 6, 5, 6, 7, 5, 6, 5, 6, 7, 5};
  const auto all = CountAllSubpaths(s, 8);
  std::vector<std::vector<BlockId>> targets;
  for (const auto& [k, n] : all) targets.push_back(k);
  targets.push_back({6, 7, 5});  // not a power-of-two length: matched all the same
  SubpathMatcher m(targets);
  for (BlockId b : s) m.Feed(b);
  for (const auto& [k, n] : all) EXPECT_EQ(m.Count(k), n);
  EXPECT_EQ(m.Count(std::vector<BlockId>{5, 6, 7}), 5u);  // 567 675 756 567 675: one class
  EXPECT_EQ(m.Count(std::vector<BlockId>{7, 7}), 0u);     // never asked for

  SubpathMatcher gapped({{5, 6}});
  for (BlockId b : {5, 6, 5}) gapped.Feed(b);
  gapped.Gap();
  for (BlockId b : {6, 5, 6}) gapped.Feed(b);  // 5|6 across the gap does not count
  // 56 65 | 65 56 -> windows [5 6] x4 (65 is the same class), none across the gap.
  EXPECT_EQ(gapped.Count(std::vector<BlockId>{6, 5}), 4u);
}

}  // namespace
}  // namespace pathprof::profiles
