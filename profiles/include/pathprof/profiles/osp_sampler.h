// The per-thread OSP skip/sample loop (Oren, fig. 2.1): count down `skip` blocks, then record a
// subpath of a chosen length and hand it to the process's reservoir.
//
// One difference from fig. 2.1, on purpose: the paper draws the next skip only after a sampled
// subpath ends, so the blocks inside a sample can never start one and every estimate is low by
// about f / (f + mean length). Here the next skip is drawn as soon as a subpath starts (the gaps
// between starts are geometric, so each block starts a subpath independently with probability
// 1/f) and subpaths may overlap; that makes count * f / P(length) exactly unbiased. With one
// start every f blocks and f well above the mean length, overlaps are rare.
//
// Skipping is O(1) per block in FeedBlock and O(1) per skipped run in Feed / FeedBlocks, which
// jump over `skip` blocks at once. Not thread-safe: one sampler per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/profiles/osp_block_stream.h"
#include "pathprof/profiles/osp_draws.h"
#include "pathprof/profiles/osp_reservoir.h"

namespace pathprof::profiles {

class OspThreadSampler {
 public:
  // `draws` null: random draws seeded from the reservoir's seed and `stream_id` (e.g. the tid).
  OspThreadSampler(OspReservoir* reservoir, uint64_t stream_id,
                   std::unique_ptr<OspDrawSource> draws = nullptr);
  ~OspThreadSampler();
  OspThreadSampler(const OspThreadSampler&) = delete;
  OspThreadSampler& operator=(const OspThreadSampler&) = delete;

  // The blocks of one batch of this thread; a batch with gap_before drops partial subpaths first.
  void Feed(const BranchBatch& batch);
  void FeedBlocks(std::span<const BlockId> blocks);
  void FeedBlock(BlockId block) {
    ++unflushed_blocks_;
    if (!in_flight_.empty()) Advance(block);
    if (skip_ > 0) {
      --skip_;
      return;
    }
    Start(block);
  }
  // A discontinuity: subpaths in progress cannot be completed and are dropped (and counted).
  // The skip count is kept: the geometric gaps are memoryless.
  void Gap();
  // Hands the count of blocks seen to the reservoir's stats.
  void Flush();

  uint64_t skip_remaining() const { return skip_; }
  size_t in_flight() const { return in_flight_.size(); }

 private:
  struct InFlight {
    std::vector<BlockId> blocks;
    uint32_t length = 0;
    double f_at_start = 1;
  };

  template <typename BlockAt>
  void FeedRange(size_t n, BlockAt block_at);
  void Start(BlockId first);
  void Advance(BlockId block);

  OspReservoir* reservoir_;
  std::unique_ptr<OspDrawSource> draws_;
  uint64_t skip_ = 0;
  double skip_f_ = 1;  // the f the current skip was drawn with
  std::vector<InFlight> in_flight_;
  std::vector<std::vector<BlockId>> spare_buffers_;  // reused so sampling does not allocate
  uint64_t unflushed_blocks_ = 0;
};

}  // namespace pathprof::profiles
