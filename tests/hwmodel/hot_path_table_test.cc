#include "pathprof/hwmodel/hot_path_table.h"

#include <gtest/gtest.h>

#include "pathprof/hwmodel/exact_path_profile.h"
#include "test_streams.h"

namespace pathprof::hwmodel {
namespace {

using testing::P;

HotPathTable Make(uint32_t entries, uint32_t ways, HptReplacement r,
                  HptIndex index = HptIndex::kStart) {
  HotPathTableConfig c;
  c.entries = entries;
  c.ways = ways;
  c.replacement = r;
  c.index = index;
  auto t = HotPathTable::Create(c);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

const PathDescriptor kA = P(0x100, 1, 1), kB = P(0x200, 1, 1), kC = P(0x300, 1, 1),
                     kD = P(0x400, 1, 1), kE = P(0x500, 1, 1);

using Entries = std::vector<HotPathTable::Entry>;

TEST(HotPathTableTest, LfuEvictionOrderInOneSetTwoWays) {
  HotPathTable t = Make(2, 2, HptReplacement::kLfu);
  EXPECT_FALSE(t.Add(kA, 1));  // way0 = A:1
  EXPECT_FALSE(t.Add(kB, 1));  // way1 = B:1
  EXPECT_TRUE(t.Add(kA, 1));   // A:2
  EXPECT_FALSE(t.Add(kC, 1));  // least frequent is B:1 -> way1 = C:1
  EXPECT_EQ(t.SetContents(0), (Entries{{kA, 2}, {kC, 1}}));
  EXPECT_FALSE(t.Add(kB, 1));  // C:1 < A:2 -> way1 = B:1
  EXPECT_EQ(t.SetContents(0), (Entries{{kA, 2}, {kB, 1}}));
  EXPECT_TRUE(t.Add(kA, 5));   // A:7
  EXPECT_FALSE(t.Add(kD, 3));  // B:1 evicted -> D:3
  EXPECT_FALSE(t.Add(kE, 1));  // D:3 < A:7 -> E:1
  EXPECT_EQ(t.SetContents(0), (Entries{{kA, 7}, {kE, 1}}));
  // Victims B, C, B, D carried 1 + 1 + 1 + 3.
  EXPECT_EQ(t.stats().evictions, 4u);
  EXPECT_EQ(t.stats().evicted_value, 6u);
  EXPECT_EQ(t.stats().hits, 2u);
  EXPECT_EQ(t.stats().misses, 6u);
  EXPECT_EQ(t.Sorted(), (Entries{{kA, 7}, {kE, 1}}));
}

TEST(HotPathTableTest, LfuTieEvictsLowestWay) {
  HotPathTable t = Make(2, 2, HptReplacement::kLfu);
  t.Add(kA, 1);
  t.Add(kB, 1);
  t.Add(kC, 1);  // A and B tie: way 0 (A) goes
  EXPECT_EQ(t.SetContents(0), (Entries{{kC, 1}, {kB, 1}}));
}

TEST(HotPathTableTest, LruDiffersFromLfu) {
  HotPathTable t = Make(2, 2, HptReplacement::kLru);
  t.Add(kA, 1);
  t.Add(kB, 1);
  t.Add(kA, 1);  // A recent
  t.Add(kC, 1);  // LRU is B
  EXPECT_EQ(t.SetContents(0), (Entries{{kA, 2}, {kC, 1}}));
  t.Add(kB, 1);  // LRU is now A (LFU would evict C:1 here)
  EXPECT_EQ(t.SetContents(0), (Entries{{kB, 1}, {kC, 1}}));
  t.Add(kA, 5);  // LRU is C
  EXPECT_EQ(t.SetContents(0), (Entries{{kB, 1}, {kA, 5}}));
}

TEST(HotPathTableTest, XorIndexSeparatesPathsSharingAStart) {
  // 8 entries x 2 ways = 4 sets. Two paths from 0x1000 differing only in outcomes.
  const PathDescriptor p1 = P(0x1000, 2, 0b01), p2 = P(0x1000, 2, 0b10);
  HotPathTable by_start = Make(8, 2, HptReplacement::kLfu, HptIndex::kStart);
  EXPECT_EQ(by_start.SetIndex(p1), 0u);
  EXPECT_EQ(by_start.SetIndex(p2), 0u);
  HotPathTable by_xor = Make(8, 2, HptReplacement::kLfu, HptIndex::kXor);
  // 0x1000 ^ outcomes ^ (outcomes >> 2) ^ (2 << 1): low two bits 0b01 and 0b10.
  EXPECT_EQ(by_xor.SetIndex(p1), 1u);
  EXPECT_EQ(by_xor.SetIndex(p2), 2u);
  by_xor.Add(p1, 1);
  by_xor.Add(p2, 1);
  EXPECT_EQ(by_xor.SetContents(1), (Entries{{p1, 1}}));
  EXPECT_EQ(by_xor.SetContents(2), (Entries{{p2, 1}}));
}

TEST(HotPathTableTest, AccumulatorsSaturate) {
  HotPathTable t = Make(4, 2, HptReplacement::kLfu);
  t.Add(kA, 0xFFFFFFF0u);
  t.Add(kA, 0x20);
  t.Add(kB, uint64_t{1} << 33);
  EXPECT_EQ(t.Sorted(), (Entries{{kA, 0xFFFFFFFFu}, {kB, 0xFFFFFFFFu}}));
  EXPECT_EQ(t.stats().saturations, 2u);
  t.Add(kA, 1);
  EXPECT_EQ(t.Sorted()[0].value, 0xFFFFFFFFu);
  EXPECT_EQ(t.stats().saturations, 3u);
}

TEST(HotPathTableTest, RecordsTheConfiguredMetric) {
  HotPathTableConfig c;
  c.entries = 4;
  c.ways = 4;
  c.metric = Metric::kMispredictions;
  auto t = HotPathTable::Create(c);
  ASSERT_TRUE(t.ok());
  CompletedPath done;
  done.path = kA;
  done.metrics = PathMetrics{1, 40, 100, 3};
  t->Record(done);
  t->Record(done);
  EXPECT_EQ(t->Sorted(), (Entries{{kA, 6}}));
}

TEST(HotPathTableTest, RejectsShapesWithoutPowerOfTwoSets) {
  HotPathTableConfig c;
  c.entries = 12;
  c.ways = 4;
  EXPECT_FALSE(HotPathTable::Create(c).ok());
  c.entries = 512;
  c.ways = 0;
  EXPECT_FALSE(HotPathTable::Create(c).ok());
  c.ways = 512;  // fully associative, one set
  EXPECT_TRUE(HotPathTable::Create(c).ok());
}

TEST(ExactPathProfileTest, SortsByMetric) {
  ExactPathProfile exact;
  exact.Add(kA, PathMetrics{1, 10, 0, 0});
  exact.Add(kB, PathMetrics{1, 50, 0, 0});
  exact.Add(kA, PathMetrics{1, 10, 0, 0});
  const auto by_count = exact.Sorted(Metric::kCount);
  ASSERT_EQ(by_count.size(), 2u);
  EXPECT_EQ(by_count[0].first, kA);
  EXPECT_EQ(exact.Sorted(Metric::kInstructions)[0].first, kB);
  EXPECT_EQ(exact.Total(Metric::kInstructions), 70u);
  EXPECT_EQ(exact.Get(kC), PathMetrics{});
}

}  // namespace
}  // namespace pathprof::hwmodel
