// Exact subpath counts, the ground truth the OSP reservoir's estimates are scored against
// (Oren, table 4.8): occurrences of subpaths of lengths 2, 4, ..., max_length in a block stream,
// keyed like kCanonicalRotation ids (the least rotation of the block sequence).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "pathprof/profiles/osp_block_stream.h"

namespace pathprof::profiles {

// Every subpath of length 2^n <= max_length in one gap-free stream, by canonical rotation.
// Windows are counted by content first (a rolling hash; equal hashes are compared block by block,
// so the count is exact), then merged by rotation class. Memory grows with the distinct windows.
std::map<std::vector<BlockId>, uint64_t> CountAllSubpaths(std::span<const BlockId> blocks,
                                                          uint32_t max_length);

// Counts, over a stream fed block by block, the occurrences of a few chosen subpaths (e.g. the
// ones a report lists): a window matches a target when it is a rotation of it. Windows never
// span a Gap(), as the sampler drops subpaths in progress there.
class SubpathMatcher {
 public:
  // `targets`: block sequences of length 1..kMaxLength (any rotation; duplicates count once).
  explicit SubpathMatcher(const std::vector<std::vector<BlockId>>& targets);

  void Feed(BlockId block);
  void Gap();
  // Occurrences of the target's rotation class so far; 0 for a sequence not given.
  uint64_t Count(std::span<const BlockId> target) const;

  static constexpr uint32_t kMaxLength = 1024;

 private:
  struct Rotation {
    std::vector<BlockId> blocks;
    size_t cls;  // index into counts_
  };
  struct ByLength {
    uint32_t length;
    uint64_t top = 1;  // base^(length-1)
    uint64_t hash = 0;
    std::unordered_multimap<uint64_t, Rotation> rotations;
  };

  std::vector<ByLength> lengths_;
  std::map<std::vector<BlockId>, size_t> class_of_;  // canonical rotation -> counts_ index
  std::vector<uint64_t> counts_;
  std::vector<BlockId> ring_;  // the last kMaxLength blocks
  size_t head_ = 0;            // where the next block goes
  uint64_t valid_ = 0;         // blocks since the last gap
};

}  // namespace pathprof::profiles
