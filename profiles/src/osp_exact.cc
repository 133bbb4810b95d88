#include "pathprof/profiles/osp_exact.h"

#include <algorithm>
#include <cstring>

#include "pathprof/profiles/osp_encoding.h"

namespace pathprof::profiles {
namespace {

constexpr uint64_t kBase = 0x100000001b3ULL;  // odd, so hashing wraps modulo 2^64 cleanly

std::vector<BlockId> Canonical(std::span<const BlockId> seq) {
  const size_t start = LeastRotation(seq);
  std::vector<BlockId> out(seq.begin() + static_cast<ptrdiff_t>(start), seq.end());
  out.insert(out.end(), seq.begin(), seq.begin() + static_cast<ptrdiff_t>(start));
  return out;
}

uint64_t Power(uint64_t base, uint32_t exponent) {
  uint64_t r = 1;
  for (uint32_t i = 0; i < exponent; ++i) r *= base;
  return r;
}

}  // namespace

std::map<std::vector<BlockId>, uint64_t> CountAllSubpaths(std::span<const BlockId> s,
                                                          uint32_t max_length) {
  std::map<std::vector<BlockId>, uint64_t> exact;
  for (uint32_t len = 2; len <= max_length && len <= s.size(); len *= 2) {
    struct Window {
      size_t first;
      uint64_t count;
    };
    // hash -> distinct windows with that hash (almost always one).
    std::unordered_map<uint64_t, std::vector<Window>> windows;
    const uint64_t top = Power(kBase, len - 1);
    uint64_t h = 0;
    for (uint32_t i = 0; i < len; ++i) h = h * kBase + s[i];
    for (size_t pos = 0;; ++pos) {
      auto& bucket = windows[h];
      auto same = std::find_if(bucket.begin(), bucket.end(), [&](const Window& w) {
        return std::memcmp(&s[w.first], &s[pos], len * sizeof(BlockId)) == 0;
      });
      if (same == bucket.end()) {
        bucket.push_back(Window{pos, 1});
      } else {
        ++same->count;
      }
      if (pos + len >= s.size()) break;
      h = (h - s[pos] * top) * kBase + s[pos + len];
    }
    for (const auto& [hash, bucket] : windows) {
      for (const Window& w : bucket) exact[Canonical(s.subspan(w.first, len))] += w.count;
    }
  }
  return exact;
}

SubpathMatcher::SubpathMatcher(const std::vector<std::vector<BlockId>>& targets)
    : ring_(kMaxLength, 0) {
  for (const auto& t : targets) {
    if (t.empty() || t.size() > kMaxLength) continue;
    auto canonical = Canonical(t);
    auto [it, inserted] = class_of_.try_emplace(canonical, counts_.size());
    if (!inserted) continue;
    counts_.push_back(0);
    const auto len = static_cast<uint32_t>(t.size());
    auto by = std::find_if(lengths_.begin(), lengths_.end(),
                           [&](const ByLength& b) { return b.length == len; });
    if (by == lengths_.end()) {
      lengths_.push_back(ByLength{len, Power(kBase, len - 1), 0, {}});
      by = lengths_.end() - 1;
    }
    // Every distinct rotation, so a window is matched by content alone.
    std::vector<std::vector<BlockId>> seen;
    for (size_t r = 0; r < len; ++r) {
      std::vector<BlockId> rot(canonical.begin() + static_cast<ptrdiff_t>(r), canonical.end());
      rot.insert(rot.end(), canonical.begin(), canonical.begin() + static_cast<ptrdiff_t>(r));
      if (std::find(seen.begin(), seen.end(), rot) != seen.end()) continue;
      seen.push_back(rot);
      uint64_t h = 0;
      for (BlockId b : rot) h = h * kBase + b;
      by->rotations.emplace(h, Rotation{std::move(rot), it->second});
    }
  }
}

void SubpathMatcher::Feed(BlockId block) {
  const BlockId* ring = ring_.data();
  for (ByLength& by : lengths_) {
    // The block leaving this length's window is `length` positions back in the ring.
    const BlockId out =
        valid_ >= by.length ? ring[(head_ + kMaxLength - by.length) % kMaxLength] : 0;
    by.hash = (by.hash - out * by.top) * kBase + block;
  }
  ring_[head_] = block;
  head_ = (head_ + 1) % kMaxLength;
  ++valid_;
  for (ByLength& by : lengths_) {
    if (valid_ < by.length) continue;
    auto [lo, hi] = by.rotations.equal_range(by.hash);
    for (auto it = lo; it != hi; ++it) {
      const auto& rot = it->second.blocks;
      bool same = true;
      for (uint32_t i = 0; i < by.length && same; ++i) {
        same = ring_[(head_ + kMaxLength - by.length + i) % kMaxLength] == rot[i];
      }
      if (same) {
        ++counts_[it->second.cls];
        break;
      }
    }
  }
}

void SubpathMatcher::Gap() {
  valid_ = 0;
  for (ByLength& by : lengths_) by.hash = 0;
}

uint64_t SubpathMatcher::Count(std::span<const BlockId> target) const {
  if (target.empty()) return 0;
  auto it = class_of_.find(Canonical(target));
  return it == class_of_.end() ? 0 : counts_[it->second];
}

}  // namespace pathprof::profiles
