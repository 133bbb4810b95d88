#include "pathprof/profiles/pcct_child_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace pathprof::profiles {
namespace {

// Hashes chosen by hand: the tag is the high 32 bits, its low bits the home slot (16 slots).
uint64_t HashWithHome(uint32_t home, uint32_t salt) {
  return static_cast<uint64_t>((salt << 8) | home) << 32;
}

uint32_t FindId(const PcctChildTable& t, uint64_t hash, uint32_t id) {
  return t.Find(hash, [&](uint32_t c) { return c == id; });
}

TEST(PcctChildTable, FindsInsertedIdsAndMissesOthers) {
  PcctChildTable t;
  EXPECT_EQ(FindId(t, 7, 1), PcctChildTable::kNone);
  t.Insert(HashWithHome(3, 1), 10);
  t.Insert(HashWithHome(3, 2), 11);  // same home slot, next slot
  EXPECT_EQ(FindId(t, HashWithHome(3, 1), 10), 10u);
  EXPECT_EQ(FindId(t, HashWithHome(3, 2), 11), 11u);
  // Same tag but the key check says no: keeps probing, then misses.
  EXPECT_EQ(FindId(t, HashWithHome(3, 1), 11), PcctChildTable::kNone);
  EXPECT_EQ(t.size(), 2u);
}

TEST(PcctChildTable, EraseShiftsBackACollidingRunAcrossTheWrap) {
  PcctChildTable t;
  // Home 15 (the last of 16 slots): a run 15, 0, 1, then an entry homed at 0 after them.
  t.Insert(HashWithHome(15, 1), 1);
  t.Insert(HashWithHome(15, 2), 2);
  t.Insert(HashWithHome(15, 3), 3);
  t.Insert(HashWithHome(0, 4), 4);
  t.Insert(HashWithHome(1, 5), 5);
  t.Erase(HashWithHome(15, 1), 1);
  EXPECT_EQ(FindId(t, HashWithHome(15, 1), 1), PcctChildTable::kNone);
  EXPECT_EQ(FindId(t, HashWithHome(15, 2), 2), 2u);
  EXPECT_EQ(FindId(t, HashWithHome(15, 3), 3), 3u);
  EXPECT_EQ(FindId(t, HashWithHome(0, 4), 4), 4u);
  EXPECT_EQ(FindId(t, HashWithHome(1, 5), 5), 5u);
  t.Erase(HashWithHome(15, 3), 3);
  t.Erase(HashWithHome(0, 9), 9);  // absent: no-op
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(FindId(t, HashWithHome(0, 4), 4), 4u);
  EXPECT_EQ(FindId(t, HashWithHome(1, 5), 5), 5u);
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(FindId(t, HashWithHome(1, 5), 5), PcctChildTable::kNone);
}

TEST(PcctChildTable, MatchesAMapUnderRandomInsertsAndErasesWithFewHomes) {
  // Few distinct homes force long runs, growth and shifts; half the tags have their home in the
  // table's last 16 slots whatever its size, so runs wrap around. A std::map is the reference.
  std::mt19937 rng(5);
  PcctChildTable t;
  std::map<uint32_t, uint64_t> ref;  // id -> hash
  uint32_t next_id = 0;
  for (int step = 0; step < 4000; ++step) {
    if (ref.empty() || rng() % 3 != 0) {
      const uint32_t tag = (rng() % 2 ? 0xfffffff0u : 0x7000u) | (rng() % 16);
      const uint64_t hash = static_cast<uint64_t>(tag) << 32 | rng();
      t.Insert(hash, next_id);
      ref[next_id++] = hash;
    } else {
      auto it = ref.begin();
      std::advance(it, rng() % ref.size());
      t.Erase(it->second, it->first);
      ref.erase(it);
    }
    if (step % 97 == 0) {
      ASSERT_EQ(t.size(), ref.size());
      for (const auto& [id, hash] : ref) ASSERT_EQ(FindId(t, hash, id), id) << "step " << step;
    }
  }
  EXPECT_EQ(t.Hash(1, 2, 3), PcctChildTable::Hash(1, 2, 3));
  EXPECT_NE(PcctChildTable::Hash(1, 2, 3), PcctChildTable::Hash(2, 2, 3));
  EXPECT_NE(PcctChildTable::Hash(1, 2, 3), PcctChildTable::Hash(1, 3, 2));
}

}  // namespace
}  // namespace pathprof::profiles
