// The PCCT's child lookup: (parent node, function, call site) -> child node, one table for the
// whole tree.
//
// Open addressing with linear probing and backward-shift deletion (no tombstones), 8-byte slots
// holding the child's id and 32 bits of its key's hash. The key itself lives in the node, which the
// caller touches anyway, so a probe only reads the node when the hash bits match. It replaces a
// std::unordered_map whose per-entry heap nodes and bucket indirection cost a cache miss or two
// per frame: the child lookup is paid once per new frame of every sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pathprof::profiles {

class PcctChildTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Inline: it runs once per new frame of every sample.
  static uint64_t Hash(uint32_t parent, uint64_t function, uint64_t call_site) {
    // Odd multipliers spread the three fields, then a splitmix64 finalizer mixes the high bits
    // (the tag) with the low ones.
    uint64_t x = function * 0x9e3779b97f4a7c15ULL ^ call_site * 0xc2b2ae3d27d4eb4fULL ^
                 static_cast<uint64_t>(parent) * 0x165667b19e3779f9ULL;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  // The id whose key equals the probed one (is_key(id) == true), or kNone.
  template <typename IsKey>
  uint32_t Find(uint64_t hash, IsKey&& is_key) const {
    if (slots_.empty()) return kNone;
    const uint32_t tag = TagOf(hash);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const Slot s = slots_[i];
      if (s.id == kNone) return kNone;
      if (s.tag == tag && is_key(s.id)) return s.id;
    }
  }
  // Adds `id` under `hash`; its key must not be in the table already.
  void Insert(uint64_t hash, uint32_t id);
  // Removes `id`, filed under `hash`; a no-op when absent.
  void Erase(uint64_t hash, uint32_t id);
  void Clear();
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t id = kNone;
    uint32_t tag = 0;  // the hash's high half; its low bits pick the home slot
  };
  static uint32_t TagOf(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }
  void Grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace pathprof::profiles
