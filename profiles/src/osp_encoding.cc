#include "pathprof/profiles/osp_encoding.h"

#include <algorithm>

namespace pathprof::profiles {

std::string_view OspEncodingName(OspEncoding encoding) {
  switch (encoding) {
    case OspEncoding::kCanonicalRotation:
      return "canonical";
    case OspEncoding::kXor:
      return "xor";
    case OspEncoding::kSortedLinear:
      return "sorted-linear";
  }
  return "unknown";
}

bool ParseOspEncoding(std::string_view name, OspEncoding* out) {
  for (OspEncoding e :
       {OspEncoding::kCanonicalRotation, OspEncoding::kXor, OspEncoding::kSortedLinear}) {
    if (name == OspEncodingName(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

// Two candidate starts i < j race; at the first offset k where their rotations differ, the
// larger one (and the k starts after it, which can only be worse) drops out. Every comparison
// advances a candidate or k, so the loop is linear.
size_t LeastRotation(std::span<const BlockId> seq) {
  const size_t n = seq.size();
  if (n < 2) return 0;
  size_t i = 0, j = 1, k = 0;
  while (i < n && j < n && k < n) {
    const BlockId a = seq[(i + k) % n];
    const BlockId b = seq[(j + k) % n];
    if (a == b) {
      ++k;
      continue;
    }
    if (a > b) {
      i += k + 1;
    } else {
      j += k + 1;
    }
    if (i == j) ++j;
    k = 0;
  }
  return std::min(i, j);
}

namespace {

// 64-bit mix (the splitmix64 finalizer) so that block addresses, which share most high bits,
// spread over the hash table.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t SequenceHash(std::span<const BlockId> seq) {
  uint64_t h = 0x243f6a8885a308d3ULL ^ seq.size();
  for (BlockId b : seq) h = Mix(h ^ b) + 0x9e3779b97f4a7c15ULL;
  return h;
}

}  // namespace

SubpathKey EncodeSubpath(std::span<const BlockId> blocks, OspEncoding encoding) {
  SubpathKey key;
  key.encoding = encoding;
  key.length = static_cast<uint32_t>(blocks.size());
  switch (encoding) {
    case OspEncoding::kCanonicalRotation: {
      const size_t start = LeastRotation(blocks);
      key.blocks.reserve(blocks.size());
      key.blocks.insert(key.blocks.end(), blocks.begin() + static_cast<ptrdiff_t>(start),
                        blocks.end());
      key.blocks.insert(key.blocks.end(), blocks.begin(),
                        blocks.begin() + static_cast<ptrdiff_t>(start));
      key.value = SequenceHash(key.blocks);
      break;
    }
    case OspEncoding::kXor: {
      uint64_t x = 0;
      for (BlockId b : blocks) x ^= b;
      key.value = x;
      break;
    }
    case OspEncoding::kSortedLinear: {
      // The paper's variant: sort, then a linear hash (h = a*h + b_i) over the sorted ids.
      std::vector<BlockId> sorted(blocks.begin(), blocks.end());
      std::sort(sorted.begin(), sorted.end());
      uint64_t h = 0;
      for (BlockId b : sorted) h = h * 0x100000001b3ULL + b;
      key.value = h;
      break;
    }
  }
  return key;
}

}  // namespace pathprof::profiles
