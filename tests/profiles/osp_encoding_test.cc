#include "pathprof/profiles/osp_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace pathprof::profiles {
namespace {

std::vector<BlockId> Rotate(std::vector<BlockId> v, size_t by) {
  std::rotate(v.begin(), v.begin() + static_cast<ptrdiff_t>(by), v.end());
  return v;
}

// Smallest rotation by trying them all: the reference for LeastRotation.
std::vector<BlockId> BruteCanonical(const std::vector<BlockId>& v) {
  std::vector<BlockId> best = v;
  for (size_t r = 1; r < v.size(); ++r) best = std::min(best, Rotate(v, r));
  return best;
}

// Every sequence over `alphabet` of each length 1..max_len.
std::vector<std::vector<BlockId>> AllSequences(size_t alphabet, size_t max_len) {
  std::vector<std::vector<BlockId>> out;
  for (size_t len = 1; len <= max_len; ++len) {
    std::vector<BlockId> v(len, 0);
    while (true) {
      out.push_back(v);
      size_t i = 0;
      while (i < len && ++v[i] == alphabet) v[i++] = 0;
      if (i == len) break;
    }
  }
  for (auto& v : out) {
    for (auto& b : v) b = 0x400000 + 0x10 * b;  // block start addresses
  }
  return out;
}

TEST(OspEncodingTest, LeastRotationMatchesBruteForceExhaustively) {
  for (const auto& seq : AllSequences(3, 7)) {
    const size_t r = LeastRotation(seq);
    ASSERT_LT(r, seq.size());
    EXPECT_EQ(Rotate(seq, r), BruteCanonical(seq)) << "size " << seq.size();
  }
}

TEST(OspEncodingTest, LeastRotationOfPeriodicSequenceIsFirstMinimum) {
  const std::vector<BlockId> seq = {2, 1, 2, 1, 2, 1};
  EXPECT_EQ(LeastRotation(seq), 1u);
  EXPECT_EQ(LeastRotation(std::vector<BlockId>{7, 7, 7, 7}), 0u);
  EXPECT_EQ(LeastRotation(std::vector<BlockId>{}), 0u);
}

TEST(OspEncodingTest, RotationsOfABCAShareOneCanonicalId) {
  const BlockId a = 0x401000, b = 0x401020, c = 0x401040;
  const std::vector<BlockId> abca = {a, b, c, a};
  const SubpathKey key = EncodeSubpath(abca, OspEncoding::kCanonicalRotation);
  EXPECT_EQ(key.blocks, (std::vector<BlockId>{a, a, b, c}));  // the blocks are kept, rotated
  EXPECT_EQ(key.length, 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(EncodeSubpath(Rotate(abca, r), OspEncoding::kCanonicalRotation), key) << r;
  }
  // A permutation that is not a rotation is a different subpath.
  EXPECT_NE(EncodeSubpath(std::vector<BlockId>{a, c, b, a}, OspEncoding::kCanonicalRotation), key);
}

TEST(OspEncodingTest, CanonicalIdsCollideExactlyForRotationsExhaustively) {
  const auto all = AllSequences(3, 6);  // 1092 sequences, ~600k pairs
  std::vector<SubpathKey> keys;
  std::vector<std::vector<BlockId>> brute;  // two sequences are rotations iff these are equal
  for (const auto& s : all) {
    keys.push_back(EncodeSubpath(s, OspEncoding::kCanonicalRotation));
    brute.push_back(BruteCanonical(s));
  }
  size_t equal_pairs = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) {
      const bool same = keys[i] == keys[j];
      if (same != (brute[i] == brute[j])) FAIL() << "pair " << i << " " << j;
      equal_pairs += same;
    }
  }
  // Rotation classes (necklaces) of length n over 3 letters: 3,6,11,24,51,130 for n=1..6; the
  // number of equal pairs is sum over classes of C(size, 2).
  std::map<std::vector<BlockId>, size_t> classes;
  for (const auto& s : all) ++classes[BruteCanonical(s)];
  EXPECT_EQ(classes.size(), 3u + 6 + 11 + 24 + 51 + 130);
  size_t expected_pairs = 0;
  for (const auto& [k, n] : classes) expected_pairs += n * (n - 1) / 2;
  EXPECT_EQ(equal_pairs, expected_pairs);
}

TEST(OspEncodingTest, XorCollidesWhereThePaperSays) {
  // Ch. 3.2: "the paths [abbc] and [addc] will be counted as one path".
  const BlockId a = 0x1000, b = 0x2340, c = 0x3000, d = 0x7770;
  EXPECT_EQ(EncodeSubpath(std::vector<BlockId>{a, b, b, c}, OspEncoding::kXor),
            EncodeSubpath(std::vector<BlockId>{a, d, d, c}, OspEncoding::kXor));
  // ... and it groups permutations: [abcd] == [acbd].
  EXPECT_EQ(EncodeSubpath(std::vector<BlockId>{a, b, c, d}, OspEncoding::kXor),
            EncodeSubpath(std::vector<BlockId>{a, c, b, d}, OspEncoding::kXor));
  // The length is part of the id, so [ab] and [abcc] differ.
  EXPECT_NE(EncodeSubpath(std::vector<BlockId>{a, b}, OspEncoding::kXor),
            EncodeSubpath(std::vector<BlockId>{a, b, c, c}, OspEncoding::kXor));
  // The canonical encoding keeps all four apart.
  EXPECT_NE(EncodeSubpath(std::vector<BlockId>{a, b, b, c}, OspEncoding::kCanonicalRotation),
            EncodeSubpath(std::vector<BlockId>{a, d, d, c}, OspEncoding::kCanonicalRotation));
}

TEST(OspEncodingTest, SortedLinearKeepsMultiplicityButLosesOrder) {
  const BlockId a = 0x1000, b = 0x2340, c = 0x3000, d = 0x7770;
  // Unlike XOR, blocks seen twice still count.
  EXPECT_NE(EncodeSubpath(std::vector<BlockId>{a, b, b, c}, OspEncoding::kSortedLinear),
            EncodeSubpath(std::vector<BlockId>{a, d, d, c}, OspEncoding::kSortedLinear));
  // Order is lost: rotations and non-rotation permutations collide alike.
  EXPECT_EQ(EncodeSubpath(std::vector<BlockId>{a, b, c, d}, OspEncoding::kSortedLinear),
            EncodeSubpath(std::vector<BlockId>{b, c, d, a}, OspEncoding::kSortedLinear));
  EXPECT_EQ(EncodeSubpath(std::vector<BlockId>{a, b, c, d}, OspEncoding::kSortedLinear),
            EncodeSubpath(std::vector<BlockId>{a, c, b, d}, OspEncoding::kSortedLinear));
}

TEST(OspEncodingTest, NamesRoundTrip) {
  for (OspEncoding e :
       {OspEncoding::kCanonicalRotation, OspEncoding::kXor, OspEncoding::kSortedLinear}) {
    OspEncoding parsed = OspEncoding::kXor;
    ASSERT_TRUE(ParseOspEncoding(OspEncodingName(e), &parsed));
    EXPECT_EQ(parsed, e);
  }
  OspEncoding parsed;
  EXPECT_FALSE(ParseOspEncoding("rot13", &parsed));
}

}  // namespace
}  // namespace pathprof::profiles
