// Per image: "from this address, the next branch instruction at or after it", memoized per start
// address, so a fall-through walk costs one hash lookup per branch instead of one x86 decode per
// instruction. Addresses here are image virtual addresses (before load bias).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/x86_branch.h"

namespace pathprof::decoders {

enum class BranchScan : uint8_t {
  kOk = 0,
  kInvalidBytes,  // an instruction on the way does not decode (wrong image, data in code)
  kEndOfCode,     // ran off the end of the executable bytes before meeting a branch
  kNotCode,       // the start address is not inside executable bytes of the image
  kTooLong,       // no branch within kMaxScanBytes
};

struct BranchSite {
  uint64_t address = 0;        // the branch (or, on error, where the scan stopped)
  uint64_t direct_target = 0;  // valid when has_direct_target
  uint32_t instructions = 0;   // from the start address through the branch, inclusive
  uint8_t length = 0;
  BranchKind kind = BranchKind::kUnknown;
  bool has_direct_target = false;
  BranchScan scan = BranchScan::kOk;

  uint64_t next() const { return address + length; }
};

// A piece of executable bytes at an image virtual address.
struct CodeSegment {
  uint64_t vaddr = 0;
  std::span<const uint8_t> bytes;
};

class BranchCache {
 public:
  // A scan that meets no branch within this many bytes gives up (kTooLong). Matches perf's
  // basic-block bound (MAXBB - MAXINSN) so that reconstructions compare one to one.
  static constexpr uint64_t kMaxScanBytes = 16384 - 16;

  // Executable segments of `image`; the image is kept alive by the cache.
  explicit BranchCache(std::shared_ptr<const ElfImage> image);
  // Raw code (tests, vdso); `keepalive` owns the bytes.
  BranchCache(std::vector<CodeSegment> segments, std::shared_ptr<const void> keepalive);

  // The first branch at or after `vaddr` on the linear decode from `vaddr`.
  const BranchSite& NextBranch(uint64_t vaddr);

  // Slow path, for the rare question the memo cannot answer: does the linear decode from
  // `start` reach `target` on an instruction boundary before any branch? Returns the number of
  // instructions from `start` through `target` inclusive, or 0 when it does not.
  uint32_t InstructionsTo(uint64_t start, uint64_t target) const;

  // Decodes the one instruction at `vaddr` (classification of LBR sources).
  bool DecodeAt(uint64_t vaddr, X86Instruction* out) const;

  const std::shared_ptr<const ElfImage>& image() const { return image_; }
  uint64_t decoded_instructions() const { return decoded_instructions_; }
  size_t memo_size() const { return memo_.size(); }

 private:
  std::span<const uint8_t> CodeAt(uint64_t vaddr) const;
  BranchSite Scan(uint64_t vaddr);

  std::shared_ptr<const ElfImage> image_;
  std::shared_ptr<const void> keepalive_;
  std::vector<CodeSegment> segments_;
  std::unordered_map<uint64_t, BranchSite> memo_;
  uint64_t decoded_instructions_ = 0;
};

}  // namespace pathprof::decoders
