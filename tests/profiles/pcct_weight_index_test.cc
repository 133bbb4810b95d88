#include "pathprof/profiles/pcct_weight_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace pathprof::profiles {
namespace {

TEST(WeightIndex, TopKHeaviestFirst) {
  WeightIndex ix;
  ix.Set(3, 5);
  ix.Set(1, 9);
  ix.Set(7, 2);
  ix.Set(4, 0);  // zero weight is not indexed
  EXPECT_EQ(ix.size(), 3u);
  EXPECT_EQ(ix.Top(2), (std::vector<std::pair<uint32_t, uint64_t>>{{1, 9}, {3, 5}}));
  ix.Set(7, 10);  // moves past everyone
  ix.Set(1, 9);   // unchanged
  EXPECT_EQ(ix.Top(5), (std::vector<std::pair<uint32_t, uint64_t>>{{7, 10}, {1, 9}, {3, 5}}));
  ix.Erase(1);
  EXPECT_FALSE(ix.Contains(1));
  EXPECT_EQ(ix.WeightOf(7), 10u);
  EXPECT_EQ(ix.Top(5), (std::vector<std::pair<uint32_t, uint64_t>>{{7, 10}, {3, 5}}));
}

// Random increments, decrements and erasures against a plain array, checking the full order.
TEST(WeightIndex, MatchesReferenceUnderRandomUpdates) {
  WeightIndex ix;
  std::vector<uint64_t> ref(200, 0);
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const uint32_t id = rng() % ref.size();
    const int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      ref[id] += 1;
    } else if (op < 8) {
      ref[id] += rng() % 50;
    } else if (op < 9) {
      ref[id] = ref[id] / 2;
    } else {
      ref[id] = 0;
    }
    ix.Set(id, ref[id]);
    if (step % 997 == 0 || step == 19999) {
      auto top = ix.Top(ref.size());
      std::vector<uint64_t> expected;
      for (uint64_t w : ref) {
        if (w) expected.push_back(w);
      }
      std::sort(expected.rbegin(), expected.rend());
      ASSERT_EQ(top.size(), expected.size());
      for (size_t i = 0; i < top.size(); ++i) {
        ASSERT_EQ(top[i].second, expected[i]) << "rank " << i;
        ASSERT_EQ(ref[top[i].first], top[i].second);
      }
    }
  }
}

}  // namespace
}  // namespace pathprof::profiles
