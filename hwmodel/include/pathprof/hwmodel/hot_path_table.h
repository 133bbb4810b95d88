// The Hot Path Table (thesis ch. 5.4, table 5.4): a set-associative table of path descriptors
// with 32-bit saturating accumulators, LFU (or LRU, for comparison) replacement.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pathprof/core/enum_words.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathprof::hwmodel {

enum class HptIndex : uint8_t {
  kStart = 0,  // low bits of the start address
  kXor,        // XOR of start-address bits, length and outcome bits (the thesis' best)
};
enum class HptReplacement : uint8_t {
  kLfu = 0,  // victim: smallest accumulator (lowest way on ties); invalid ways first
  kLru,      // victim: least recently hit or inserted
};

// Their words (pathctl sim --index, --replacement); api/ maps them to pathprof.v1.
inline constexpr EnumWords<HptIndex, 2> kHptIndexWords{{
    {HptIndex::kXor, "xor"},
    {HptIndex::kStart, "start"},
}};
inline constexpr EnumWords<HptReplacement, 2> kHptReplacementWords{{
    {HptReplacement::kLfu, "lfu"},
    {HptReplacement::kLru, "lru"},
}};
std::string_view HptIndexName(HptIndex i);
bool ParseHptIndex(std::string_view name, HptIndex* out);
std::string_view HptReplacementName(HptReplacement r);
bool ParseHptReplacement(std::string_view name, HptReplacement* out);

struct HotPathTableConfig {
  uint32_t entries = 512;  // sets = entries / ways, a power of two
  uint32_t ways = 4;
  HptIndex index = HptIndex::kXor;
  HptReplacement replacement = HptReplacement::kLfu;
  Metric metric = Metric::kCount;

  Status Validate() const;
};

struct HotPathTableStats {
  uint64_t lookups = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;         // includes fills of invalid ways
  uint64_t evictions = 0;      // misses that replaced a valid entry
  uint64_t saturations = 0;    // accumulator updates clipped at 2^32-1
  uint64_t evicted_value = 0;  // sum of the accumulators thrown away by evictions
};

class HotPathTable {
 public:
  static constexpr uint32_t kMaxValue = 0xFFFFFFFFu;

  struct Entry {
    PathDescriptor path;
    uint32_t value = 0;
    bool operator==(const Entry&) const = default;
  };

  static Result<HotPathTable> Create(const HotPathTableConfig& config);

  const HotPathTableConfig& config() const { return config_; }
  const HotPathTableStats& stats() const { return stats_; }
  uint32_t sets() const { return sets_; }

  // The set a descriptor maps to under the configured index function.
  uint32_t SetIndex(const PathDescriptor& p) const {
    // x86 code has no fixed instruction size, but the places paths start (function entries,
    // loop heads) are mostly 16-byte aligned, so the lowest address bits carry little; fold the
    // next bits down onto them, or aligned paths crowd into a fraction of the sets.
    uint64_t bits = p.start ^ (p.start >> 4);
    if (config_.index == HptIndex::kXor) {
      // Fold the outcome word and the length into the address bits, so paths sharing a start
      // spread over sets.
      bits ^= p.outcomes ^ (p.outcomes >> set_bits_) ^ (uint64_t{p.length} << 1);
    }
    return static_cast<uint32_t>(bits) & (sets_ - 1);
  }

  // Adds `amount` to the path's accumulator, inserting it (and evicting) on a miss; a new entry
  // starts at `amount`. Returns true on a hit.
  bool Add(const PathDescriptor& p, uint64_t amount) {
    stats_.lookups += 1;
    Slot* set = &slots_[static_cast<size_t>(SetIndex(p)) * config_.ways];
    for (uint32_t w = 0; w < config_.ways; ++w) {
      Slot& s = set[w];
      if (s.start == p.start && s.outcomes == p.outcomes && s.length == p.length && s.valid) {
        stats_.hits += 1;
        const uint64_t sum = uint64_t{s.value} + amount;
        if (sum > kMaxValue) [[unlikely]] {
          stats_.saturations += 1;
          s.value = kMaxValue;
        } else {
          s.value = static_cast<uint32_t>(sum);
        }
        s.last_use = ++clock_;
        return true;
      }
    }
    Miss(set, p, amount);
    return false;
  }
  bool Record(const CompletedPath& c) { return Add(c.path, c.metrics.Get(config_.metric)); }

  // Valid entries, largest accumulator first (ties: by start, length, outcomes).
  std::vector<Entry> Sorted() const;
  // The ways of one set, in way order; invalid ways have length 0 and value 0 and are skipped.
  std::vector<Entry> SetContents(uint32_t set) const;
  // Sum of the accumulators of valid entries.
  uint64_t Total() const;
  void Clear();

 private:
  explicit HotPathTable(const HotPathTableConfig& config);

  // 32 bytes, so a 4-way set is two cache lines.
  struct alignas(32) Slot {
    uint64_t start = 0;
    uint64_t outcomes = 0;
    uint32_t value = 0;
    uint32_t last_use = 0;  // LRU stamp
    uint8_t length = 0;
    bool valid = false;

    PathDescriptor path() const { return PathDescriptor{start, length, outcomes}; }
  };

  void Miss(Slot* set, const PathDescriptor& p, uint64_t amount);

  HotPathTableConfig config_;
  uint32_t sets_ = 0;
  uint32_t set_bits_ = 0;
  uint32_t clock_ = 0;
  std::vector<Slot> slots_;  // set-major: slots_[set * ways + way]
  HotPathTableStats stats_;
};

}  // namespace pathprof::hwmodel
