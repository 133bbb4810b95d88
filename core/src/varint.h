// LEB128 varints and zigzag. Written here rather than borrowed from protobuf's internals,
// which are not a public API and would drag protobuf into every stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pathprof {

inline void PutVarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Decodes a varint from [*pos, end). Returns false if it runs past end or exceeds 64 bits.
inline bool GetVarint(const uint8_t* data, size_t end, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= end) return false;
    uint8_t b = data[(*pos)++];
    if (shift == 63 && b > 1) return false;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace pathprof
