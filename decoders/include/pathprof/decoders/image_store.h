// Finds and caches the ELF file behind a mapping: under a binary directory (by build-id first:
// DIR/.build-id/xx/rest as `perf buildid-cache` lays it out, then any ELF file under DIR; then
// the recorded path under DIR, like perf's --symfs, then its basename), at the recorded path on
// this host, and through debuginfod when DEBUGINFOD_URLS is set. A file whose
// build-id differs from the recorded one is never used. A live process's mappings are opened as
// the mapped file, with the requester's rights (GetMapped, mapped_file.h). Images are held in an
// ImageCache, bounded and shareable, keyed by build-id or file identity; branch caches per image.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/branch_cache.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/image_cache.h"
#include "pathprof/decoders/mapped_file.h"

namespace pathprof::decoders {

struct ImageStoreOptions {
  std::string binary_dir;  // empty: none
  bool use_host_paths = true;
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  bool use_debuginfod = true;  // only takes effect when DEBUGINFOD_URLS is set
  uint64_t max_image_bytes = kDefaultMaxImageBytes;  // larger files are refused, not read
  // Where images are held; shared between stores (the daemon's sessions). Null: a store-own
  // cache with the default bounds.
  std::shared_ptr<ImageCache> cache;
};

struct ImageStoreStats {
  uint64_t lookups = 0;
  uint64_t found = 0;
  uint64_t not_found = 0;
  uint64_t build_id_mismatches = 0;  // candidates skipped because their build-id differed
  uint64_t debuginfod_fetches = 0;
  uint64_t found_by_build_id = 0;     // in the binary dir, whatever the file is called
  uint64_t binary_dir_elf_files = 0;  // ELF files indexed under the binary dir
  uint64_t binary_dir_unindexed = 0;  // entries past the index's cap, or unreadable
  uint64_t too_large = 0;             // files above max_image_bytes, refused unread
  uint64_t not_permitted = 0;         // mapped files the requester may not read
  uint64_t not_mapped_file = 0;       // a path that no longer names the mapped inode
  uint64_t requests_forgotten = 0;    // lookup answers dropped at the request cache's bound
};

class ImageStore {
 public:
  explicit ImageStore(ImageStoreOptions options = {});
  ~ImageStore();

  // The image for a recorded path (and build-id if known). Negative answers are cached too.
  Result<std::shared_ptr<const ElfImage>> Get(const std::string& path,
                                              const std::string& build_id = "");
  // The image behind mapping `m`: for a live process (access.live_pid) the mapped file itself,
  // opened with access.open_as's rights; for a recording (live_pid 0), Get(path, build-id).
  Result<std::shared_ptr<const ElfImage>> GetMapped(const Mapping& m, const FileAccess& access);
  // The vdso of a live process, read from /proc/PID/mem at [start, start+len).
  Result<std::shared_ptr<const ElfImage>> GetVdso(int pid, uint64_t start, uint64_t len);
  // A separate debug-info file for `image` (by build-id), or empty.
  std::string FindDebugFile(const ElfImage& image);

  // One branch cache per distinct image, alive as long as the store.
  BranchCache* CacheFor(const std::shared_ptr<const ElfImage>& image);

  const ImageStoreStats& stats() const { return stats_; }
  ImageCache& cache() { return *cache_; }

 private:
  std::vector<std::string> Candidates(const std::string& path, const std::string& build_id,
                                      size_t* by_build_id);
  std::string InBinaryDirByBuildId(const std::string& build_id);
  std::string Debuginfod(const std::string& build_id, bool debuginfo);

  // A request's answer: the identity its image is cached under, or why there is none.
  void Remember(const std::string& request, Result<std::string> answer);

  ImageStoreOptions options_;
  ImageStoreStats stats_;
  std::shared_ptr<ImageCache> cache_;
  // Bounded: a process that maps ever new paths must not grow it without end.
  static constexpr size_t kMaxRequests = 8192;
  std::map<std::string, Result<std::string>> by_request_;
  std::map<const ElfImage*, std::unique_ptr<BranchCache>> caches_;
  bool binary_dir_indexed_ = false;
  std::map<std::string, std::string> binary_dir_by_build_id_;  // normalized id -> file
};

}  // namespace pathprof::decoders
