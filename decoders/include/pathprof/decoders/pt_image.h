// The memory image an Intel PT decoder walks: a libipt pt_image whose sections come from the
// traced process's file mappings (.pbs ImageRecords or perf MMAP2 records), backed by one
// pt_image_section_cache shared by every decoder so each file is mapped once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"

struct pt_image;
struct pt_image_section_cache;

namespace pathprof::decoders {

class PtSectionCache {
 public:
  static Result<std::shared_ptr<PtSectionCache>> Create();
  ~PtSectionCache();
  PtSectionCache(const PtSectionCache&) = delete;
  PtSectionCache& operator=(const PtSectionCache&) = delete;

  pt_image_section_cache* raw() const { return iscache_; }
  // Reads up to `size` bytes at `vaddr` of section `isid`; returns the count read, or < 0.
  int Read(int isid, uint64_t vaddr, uint8_t* buf, uint64_t size) const;

 private:
  explicit PtSectionCache(pt_image_section_cache* c) : iscache_(c) {}
  pt_image_section_cache* iscache_;
};

struct PtImageStats {
  uint64_t sections = 0;
  uint64_t skipped_no_file = 0;  // [vdso], [anon], deleted or unreadable files
};

class PtImage {
 public:
  explicit PtImage(std::shared_ptr<PtSectionCache> cache, const std::string& name = "process");
  ~PtImage();
  PtImage(const PtImage&) = delete;
  PtImage& operator=(const PtImage&) = delete;

  // Adds the file bytes [offset, offset + (end - start)) of `path` at `start`. Later mappings
  // replace earlier ones where they overlap (as after exec or munmap+mmap).
  Status AddFile(const std::string& path, uint64_t file_offset, uint64_t start, uint64_t end);
  // Adds every record that names a file; the rest (vdso, anonymous code) is counted.
  void AddImages(const std::vector<ImageRecord>& images);

  pt_image* raw() const { return image_; }
  PtSectionCache& cache() const { return *cache_; }
  const PtImageStats& stats() const { return stats_; }

 private:
  std::shared_ptr<PtSectionCache> cache_;
  pt_image* image_;
  PtImageStats stats_;
};

}  // namespace pathprof::decoders
