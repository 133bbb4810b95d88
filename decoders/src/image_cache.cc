#include "pathprof/decoders/image_cache.h"

namespace pathprof::decoders {

ImageCache::ImageCache(ImageCacheLimits limits) : limits_(limits) {}

std::shared_ptr<const ElfImage> ImageCache::Find(const std::string& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_identity_.find(identity);
  if (it == by_identity_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->image;
}

std::shared_ptr<const ElfImage> ImageCache::Insert(const std::string& identity,
                                                   std::shared_ptr<const ElfImage> image) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_identity_.find(identity); it != by_identity_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->image;
  }
  const uint64_t size = image->bytes().size();
  if (size > limits_.max_bytes || limits_.max_images == 0) return image;
  lru_.push_front(Entry{identity, image});
  by_identity_[identity] = lru_.begin();
  stats_.bytes += size;
  ++stats_.images;
  EvictLocked();
  return image;
}

void ImageCache::EvictLocked() {
  while (!lru_.empty() && (stats_.bytes > limits_.max_bytes || lru_.size() > limits_.max_images)) {
    Entry& victim = lru_.back();
    stats_.bytes -= victim.image->bytes().size();
    --stats_.images;
    ++stats_.evictions;
    evicted_.emplace_back(next_seq_++, victim.image.get());
    if (evicted_.size() > kEvictionLog) evicted_.pop_front();
    by_identity_.erase(victim.identity);
    lru_.pop_back();
  }
}

bool ImageCache::EvictedSince(uint64_t* seq, std::vector<const ElfImage*>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  const bool complete = evicted_.empty() || evicted_.front().first <= *seq + 1;
  for (const auto& [n, image] : evicted_)
    if (n > *seq) out->push_back(image);
  *seq = next_seq_ - 1;
  return complete;
}

ImageCacheStats ImageCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pathprof::decoders
