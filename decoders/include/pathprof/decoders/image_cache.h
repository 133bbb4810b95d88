// The ELF images a process (the daemon, pathctl) holds, bounded in bytes and in count and
// shared by every ImageStore given it: one copy of libc for all sessions, and a user who maps
// many large files evicts the least recently used image instead of growing the reader.
// Keys are file identities (device, inode, size, mtime; or a build-id), never bare paths, so
// a hit needs the same file, not the same name.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

struct ImageCacheLimits {
  uint64_t max_bytes = uint64_t{1} << 30;  // all images together (limits.image_cache_bytes)
  size_t max_images = 512;
};

struct ImageCacheStats {
  uint64_t images = 0;  // held now
  uint64_t bytes = 0;   // held now
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
};

class ImageCache {
 public:
  explicit ImageCache(ImageCacheLimits limits = {});

  // The image under `identity`, now the most recently used; nullptr when absent.
  std::shared_ptr<const ElfImage> Find(const std::string& identity);
  // Holds `image` under `identity` (an image already there wins and is returned), evicting the
  // least recently used until both bounds hold. An image larger than max_bytes is returned
  // without being held.
  std::shared_ptr<const ElfImage> Insert(const std::string& identity,
                                         std::shared_ptr<const ElfImage> image);
  // Images evicted since `*seq`, for holders of state derived from them (libdw modules, unwind
  // tables) to drop theirs; advances `*seq`. False when the log no longer reaches back that far:
  // then the caller drops all its derived state.
  bool EvictedSince(uint64_t* seq, std::vector<const ElfImage*>* out) const;

  ImageCacheStats stats() const;
  const ImageCacheLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::string identity;
    std::shared_ptr<const ElfImage> image;
  };
  void EvictLocked();

  const ImageCacheLimits limits_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::map<std::string, std::list<Entry>::iterator> by_identity_;
  ImageCacheStats stats_;
  // (sequence number, image) of the last evictions, oldest first.
  static constexpr size_t kEvictionLog = 4096;
  std::deque<std::pair<uint64_t, const ElfImage*>> evicted_;
  uint64_t next_seq_ = 1;
};

}  // namespace pathprof::decoders
