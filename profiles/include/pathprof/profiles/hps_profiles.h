// The profile types of HPS ([HPS 2005] §4.3 and §5, see docs/references.md) fed from branch
// streams, plus the hot method counters of [Whaley 2000] fig. 12, fed from stack samples.
//
//  - hot call pair: (call site, target) of every retired call, direct or indirect;
//  - hot method: function entries, i.e. call targets, from branch streams; or the leaf function
//    of stack samples (the PCCT at depth 0);
//  - hot data stream: needs the data addresses of loads and stores. LBR and PT record control
//    flow only, so pathprof cannot build it; HpsSupport says so instead of faking one.
//
// Upstream a bursty controller picks which windows of the stream are profiled (BranchBatch with
// window=true); these profiles count what they are fed and report relative contributions, which
// is what the HPS overlap metric compares, so the sampling rate cancels out.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/profiles/pcct.h"
#include "pathprof/profiles/pcct_weight_index.h"

namespace pathprof::profiles {

enum class HpsProfileType { kHotCallPair, kHotMethod, kHotDataStream };

// Ok for the types pathprof builds from control flow; kUnsupported with the reason for hot data
// streams (they need data addresses, which LBR and PT do not carry).
Status HpsSupport(HpsProfileType type);

struct CallPair {
  uint64_t call_site = 0;  // address of the call instruction (BranchEvent::from)
  uint64_t target = 0;     // callee entry (BranchEvent::to)
  auto operator<=>(const CallPair&) const = default;
};

struct HpsStats {
  uint64_t batches = 0;
  uint64_t window_batches = 0;    // batches marked as bounded sample windows
  uint64_t events = 0;            // branch events seen
  uint64_t calls = 0;             // taken call events counted
  uint64_t untaken_calls = 0;     // call events marked not taken: malformed input, not counted
  uint64_t samples = 0;           // stack samples counted (HotMethods only)
  uint64_t rejected_samples = 0;  // stack samples without frames or with weight 0
};

// Counts keyed by K with top-k in O(k) (see WeightIndex).
template <typename K, typename Hash>
class KeyedCounter {
 public:
  void Add(const K& key, uint64_t w) {
    auto [it, inserted] = ids_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
    if (inserted) keys_.push_back(key), counts_.push_back(0);
    const uint32_t id = it->second;
    counts_[id] += w;
    index_.Set(id, counts_[id]);
    total_ += w;
  }
  uint64_t Count(const K& key) const {
    auto it = ids_.find(key);
    return it == ids_.end() ? 0 : counts_[it->second];
  }
  std::vector<std::pair<K, uint64_t>> Top(size_t k) const {
    std::vector<std::pair<K, uint64_t>> out;
    for (const auto& [id, w] : index_.Top(k)) out.emplace_back(keys_[id], w);
    return out;
  }
  // Every member with its share of the total (0..1), heaviest first: the input of the HPS
  // relative-contribution overlap.
  std::vector<std::pair<K, double>> Shares() const {
    std::vector<std::pair<K, double>> out;
    if (total_ == 0) return out;
    for (const auto& [id, w] : index_.Top(index_.size())) {
      out.emplace_back(keys_[id], static_cast<double>(w) / static_cast<double>(total_));
    }
    return out;
  }
  uint64_t total() const { return total_; }
  size_t size() const { return keys_.size(); }
  void Clear() {
    ids_.clear();
    keys_.clear();
    counts_.clear();
    index_.Clear();
    total_ = 0;
  }

 private:
  std::unordered_map<K, uint32_t, Hash> ids_;
  std::vector<K> keys_;
  std::vector<uint64_t> counts_;
  WeightIndex index_;
  uint64_t total_ = 0;
};

struct CallPairHash {
  size_t operator()(const CallPair& p) const {
    return std::hash<uint64_t>()(p.call_site * 0x9e3779b97f4a7c15ULL ^ p.target);
  }
};

// Hot call pairs: one count per retired call event.
class HotCallPairs {
 public:
  void AddBatch(const BranchBatch& batch);
  uint64_t Count(CallPair pair) const { return counts_.Count(pair); }
  std::vector<std::pair<CallPair, uint64_t>> Top(size_t k) const { return counts_.Top(k); }
  std::vector<std::pair<CallPair, double>> Shares() const { return counts_.Shares(); }
  uint64_t total() const { return counts_.total(); }
  const HpsStats& stats() const { return stats_; }
  void Clear() { counts_.Clear(); }

 private:
  KeyedCounter<CallPair, CallPairHash> counts_;
  HpsStats stats_;
};

// Hot methods keyed by function entry address (or function id for stack samples). Feed one
// instance from one kind of source: call counts and sample weights are different units.
class HotMethods {
 public:
  // Counts the target of every retired call: one method entry each.
  void AddBatch(const BranchBatch& batch);
  // Adds the sample's weight to its leaf function ([Whaley 2000] fig. 12).
  Status AddStackSample(const StackSample& sample);
  uint64_t Count(uint64_t function) const { return counts_.Count(function); }
  std::vector<std::pair<uint64_t, uint64_t>> Top(size_t k) const { return counts_.Top(k); }
  std::vector<std::pair<uint64_t, double>> Shares() const { return counts_.Shares(); }
  uint64_t total() const { return counts_.total(); }
  const HpsStats& stats() const { return stats_; }
  void Clear() { counts_.Clear(); }

 private:
  KeyedCounter<uint64_t, std::hash<uint64_t>> counts_;
  HpsStats stats_;
};

}  // namespace pathprof::profiles
