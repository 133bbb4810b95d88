// An index of items (dense uint32 ids) ordered by a non-negative weight, so that the k heaviest
// come out in O(k) and a weight change costs O(1) amortized when it moves an item to a
// neighbouring weight (unit increments, the common case for stack samples) and O(log B) otherwise,
// B being the number of distinct weights.
//
// It generalizes the sorted node/edge lists of Whaley's PCCT ([Whaley 2000] fig. 7
// update_sorted_pos; see docs/references.md) and the "stream summary" of counting sketches: items
// with equal weight share one bucket (an intrusive list); buckets sit in an ordered map. A plain
// sorted list degrades to O(n) per update when many items tie, and a std::set of (weight, id)
// costs O(log n) per update; neither fits the per-sample budget of the PCCT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace pathprof::profiles {

class WeightIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Sets the weight of `id`. Weight 0 removes the item (zero-weight items are never reported).
  void Set(uint32_t id, uint64_t weight);
  void Erase(uint32_t id) { Set(id, 0); }
  bool Contains(uint32_t id) const { return id < links_.size() && links_[id].in_index; }
  uint64_t WeightOf(uint32_t id) const;
  size_t size() const { return size_; }
  void Clear();

  // Calls f(id, weight) in descending weight order until f returns false or items run out.
  // Items of equal weight come most-recently-moved first.
  template <typename F>
  void ForEachDescending(F&& f) const {
    for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
      for (uint32_t id = it->second.head; id != kNone; id = links_[id].next) {
        if (!f(id, it->first)) return;
      }
    }
  }

  // The (id, weight) of the k heaviest items, heaviest first.
  std::vector<std::pair<uint32_t, uint64_t>> Top(size_t k) const;

 private:
  struct Bucket {
    uint32_t head = kNone;
    uint32_t count = 0;
  };
  using Map = std::map<uint64_t, Bucket>;
  struct Link {
    uint32_t prev = kNone;
    uint32_t next = kNone;
    bool in_index = false;
    Map::iterator bucket;
  };

  void Unlink(uint32_t id);
  // Returns the bucket for `weight`, creating it next to `hint` (a valid map position).
  Map::iterator BucketFor(uint64_t weight, Map::iterator hint);
  void Release(Map::iterator it);

  Map buckets_;
  // Extracted map nodes kept for reuse, so that steady-state updates do not allocate.
  std::vector<Map::node_type> spare_;
  std::vector<Link> links_;
  size_t size_ = 0;
};

}  // namespace pathprof::profiles
