// Subpath ids for the OSP reservoir (Oren, ch. 2.3.5 and 3.2).
//
// kCanonicalRotation (the default) is exact and rotation-insensitive: the id is the block
// sequence rotated to its lexicographically least rotation, so [a b c a] and [b c a a] share an
// id, while sequences that are not rotations of each other never do. The paper's two encodings
// are kept for comparison: kXor (length + XOR of block ids; loses blocks seen an even number of
// times, so [a b b c] == [a d d c]) and kSortedLinear (a linear hash over the sorted block ids;
// keeps multiplicity but loses order, so [a b c d] == [a c b d]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "pathprof/profiles/osp_block_stream.h"

namespace pathprof::profiles {

enum class OspEncoding : uint8_t {
  kCanonicalRotation = 0,
  kXor,
  kSortedLinear,
};

std::string_view OspEncodingName(OspEncoding encoding);
// Parses the names OspEncodingName produces; returns false for anything else.
bool ParseOspEncoding(std::string_view name, OspEncoding* out);

// Index of the lexicographically least rotation of `seq` (the smallest such index when the
// sequence is periodic). O(n) time, O(1) memory; the empty sequence gives 0.
size_t LeastRotation(std::span<const BlockId> seq);

// A subpath id. For kCanonicalRotation, `blocks` holds the canonical rotation and equality is
// exact; for kXor and kSortedLinear the id is (length, value) alone, as in the paper, and
// `blocks` is empty.
struct SubpathKey {
  OspEncoding encoding = OspEncoding::kCanonicalRotation;
  uint32_t length = 0;
  uint64_t value = 0;  // XOR, linear hash, or a hash of the canonical blocks
  std::vector<BlockId> blocks;

  bool operator==(const SubpathKey&) const = default;
};

struct SubpathKeyHash {
  size_t operator()(const SubpathKey& key) const {
    return static_cast<size_t>(key.value * 0x9e3779b97f4a7c15ULL ^ key.length);
  }
};

SubpathKey EncodeSubpath(std::span<const BlockId> blocks, OspEncoding encoding);

}  // namespace pathprof::profiles
