// The memory image an Intel PT decoder walks: a libipt pt_image whose sections come from the
// traced process's file mappings (.pbs ImageRecords or perf MMAP2 records), backed by one
// pt_image_section_cache shared by every decoder so each file is mapped once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_records.h"

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

// What a libipt block (start ip, instruction count) contains, branch-wise: the direct jumps and
// calls libipt followed inside it, and its last instruction. Depends only on the image, so it is
// cached per image and shared by every decoder of it.
struct PtBlockSummary {
  struct Inner {
    uint64_t from, to;
    BranchKind kind;
    uint32_t insns;  // instructions since the previous branch in the block, this one included
  };
  bool ok = false;  // false: the walk could not follow the block (bytes missing or undecodable)
  std::vector<Inner> inner;
  uint32_t tail_insns = 0;  // after the last inner branch, the last instruction included
  bool last_is_branch = false;
  bool last_direct = false;
  BranchKind last_kind = BranchKind::kUnknown;
  uint64_t last_ip = 0, last_next = 0, last_target = 0;
};

// A direct-mapped cache in front of the summary map, holding what a block needs in one cache
// line: libipt's own block cache evicts ours between blocks, so a second pointer chase per block
// (slot -> map node) was the largest cost of decoding on top of libipt.
struct alignas(64) PtBlockSlot {
  // How the block ends, decided once when the slot is filled so the hot path takes one branch.
  enum class End : uint8_t {
    kUnwalkable,   // the summary's walk failed
    kFallThrough,  // the last instruction is no branch
    kDirect,       // a direct jump or call: a taken event now
    kPending,      // resolved by where execution continues
  };
  uint64_t key = ~0ull;
  uint64_t last_ip = 0;
  uint64_t after = 0;         // where execution goes when it can be known now
  uint64_t pending_next = 0;  // a conditional's not-taken address; ~0 for every other kind
  const PtBlockSummary::Inner* inner = nullptr;
  uint32_t inner_count = 0;
  uint32_t tail_insns = 0;
  End end = End::kUnwalkable;
  BranchKind last_kind = BranchKind::kUnknown;
};
inline constexpr size_t kPtBlockSlotsLog2 = 13;

// Not thread-safe: an image (and its caches) serves the decoders of one thread.
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
  // Adds a perf MMAP/MMAP2 record's file when it is executable (MMAP records are; MMAP2 says so
  // in prot). Returns whether it was added; data mappings and file-less ones are not.
  bool AddPerfMmap(const PerfMmap& mmap);

  pt_image* raw() const { return image_; }
  PtSectionCache& cache() const { return *cache_; }
  const PtImageStats& stats() const { return stats_; }
  // Block summaries by (ip, instruction count); cleared whenever a section is added.
  std::unordered_map<uint64_t, PtBlockSummary>& block_summaries() const { return summaries_; }
  std::vector<PtBlockSlot>& block_slots() const {
    if (slots_.empty()) slots_.resize(size_t{1} << kPtBlockSlotsLog2);
    return slots_;
  }

 private:
  std::shared_ptr<PtSectionCache> cache_;
  pt_image* image_;
  PtImageStats stats_;
  mutable std::unordered_map<uint64_t, PtBlockSummary> summaries_;
  mutable std::vector<PtBlockSlot> slots_;
};

}  // namespace pathprof::decoders
