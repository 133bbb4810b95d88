#include "pathprof/profiles/pcct_weight_index.h"

#include <algorithm>
#include <iterator>

namespace pathprof::profiles {

uint64_t WeightIndex::WeightOf(uint32_t id) const {
  return Contains(id) ? links_[id].bucket->first : 0;
}

void WeightIndex::Clear() {
  buckets_.clear();
  spare_.clear();
  links_.clear();
  size_ = 0;
}

void WeightIndex::Unlink(uint32_t id) {
  Link& l = links_[id];
  Bucket& b = l.bucket->second;
  if (l.prev != kNone) {
    links_[l.prev].next = l.next;
  } else {
    b.head = l.next;
  }
  if (l.next != kNone) links_[l.next].prev = l.prev;
  --b.count;
  l.prev = l.next = kNone;
}

void WeightIndex::Release(Map::iterator it) {
  if (spare_.size() < 64) {
    spare_.push_back(buckets_.extract(it));
  } else {
    buckets_.erase(it);
  }
}

WeightIndex::Map::iterator WeightIndex::BucketFor(uint64_t weight, Map::iterator after) {
  // Fast path: the bucket is `after` or its predecessor, or belongs right before `after`.
  Map::iterator pos = after;
  bool placed = false;
  if (after != buckets_.end() && after->first == weight) return after;
  if (after == buckets_.end() || after->first > weight) {
    if (after == buckets_.begin()) {
      placed = true;
    } else {
      auto before = std::prev(after);
      if (before->first == weight) return before;
      placed = before->first < weight;
    }
  }
  if (!placed) {
    pos = buckets_.lower_bound(weight);
    if (pos != buckets_.end() && pos->first == weight) return pos;
  }
  if (!spare_.empty()) {
    Map::node_type nh = std::move(spare_.back());
    spare_.pop_back();
    nh.key() = weight;
    nh.mapped() = Bucket{};
    return buckets_.insert(pos, std::move(nh));
  }
  return buckets_.emplace_hint(pos, weight, Bucket{});
}

void WeightIndex::Set(uint32_t id, uint64_t weight) {
  if (id >= links_.size()) {
    if (weight == 0) return;
    links_.resize(static_cast<size_t>(id) + 1);
  }
  Link& l = links_[id];
  Map::iterator hint = buckets_.end();
  if (l.in_index) {
    if (l.bucket->first == weight) return;
    const uint64_t old_weight = l.bucket->first;
    Unlink(id);
    hint = l.bucket;
    if (hint->second.count == 0) {
      auto after = std::next(hint);
      if (weight != 0 && (after == buckets_.end() || after->first > weight) &&
          (hint == buckets_.begin() || std::prev(hint)->first < weight)) {
        // The item was alone in its bucket and no bucket lies between: re-key in place.
        Map::node_type nh = buckets_.extract(hint);
        nh.key() = weight;
        l.bucket = buckets_.insert(after, std::move(nh));
        l.bucket->second.head = id;
        l.bucket->second.count = 1;
        return;
      }
      Release(hint);
      hint = after;
    } else if (weight > old_weight) {
      hint = std::next(hint);
    }
    if (weight == 0) {
      l.in_index = false;
      --size_;
      return;
    }
  } else {
    if (weight == 0) return;
    l.in_index = true;
    ++size_;
  }
  Map::iterator b = BucketFor(weight, hint);
  l.bucket = b;
  l.prev = kNone;
  l.next = b->second.head;
  if (l.next != kNone) links_[l.next].prev = id;
  b->second.head = id;
  ++b->second.count;
}

std::vector<std::pair<uint32_t, uint64_t>> WeightIndex::Top(size_t k) const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  if (k == 0) return out;
  out.reserve(std::min(k, size_));
  ForEachDescending([&](uint32_t id, uint64_t w) {
    out.emplace_back(id, w);
    return out.size() < k;
  });
  return out;
}

}  // namespace pathprof::profiles
