#include "pathprof/profiles/osp_sampler.h"

namespace pathprof::profiles {

OspThreadSampler::OspThreadSampler(OspReservoir* reservoir, uint64_t stream_id,
                                   std::unique_ptr<OspDrawSource> draws)
    : reservoir_(reservoir), draws_(std::move(draws)) {
  if (!draws_) {
    draws_ = std::make_unique<OspRandomDraws>(reservoir_->config().seed ^
                                              (stream_id * 0x9e3779b97f4a7c15ULL + 1));
  }
  skip_f_ = reservoir_->f();
  skip_ = draws_->NextSkip(skip_f_);
}

OspThreadSampler::~OspThreadSampler() {
  Gap();
  Flush();
}

void OspThreadSampler::Flush() {
  if (unflushed_blocks_ == 0) return;
  reservoir_->AddBlocksSeen(unflushed_blocks_);
  unflushed_blocks_ = 0;
}

void OspThreadSampler::Gap() {
  if (in_flight_.empty()) return;
  reservoir_->CountGapDrops(in_flight_.size());
  for (InFlight& s : in_flight_) spare_buffers_.push_back(std::move(s.blocks));
  in_flight_.clear();
}

void OspThreadSampler::Start(BlockId first) {
  const double f_now = reservoir_->f();
  // The skip was drawn when starts had probability 1/skip_f_; if f rose since, keeping this
  // start with probability skip_f_/f_now turns it into a start of probability 1/f_now.
  const bool keep = f_now <= skip_f_ || draws_->NextUniform() < skip_f_ / f_now;
  skip_f_ = f_now;
  skip_ = draws_->NextSkip(f_now);
  if (!keep) {
    reservoir_->CountStartThinned();
    return;
  }
  const OspLengthDistribution& lengths = reservoir_->config().lengths;
  InFlight s;
  s.length = OspLengthDistribution::LengthOf(draws_->NextLengthIndex(lengths));
  s.f_at_start = f_now;
  if (!spare_buffers_.empty()) {
    s.blocks = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
    s.blocks.clear();
  }
  s.blocks.reserve(s.length);
  s.blocks.push_back(first);
  in_flight_.push_back(std::move(s));
  reservoir_->CountStart();
}

void OspThreadSampler::Advance(BlockId block) {
  for (size_t i = 0; i < in_flight_.size();) {
    InFlight& s = in_flight_[i];
    s.blocks.push_back(block);
    if (s.blocks.size() < s.length) {
      ++i;
      continue;
    }
    reservoir_->Insert(s.blocks, s.f_at_start);
    spare_buffers_.push_back(std::move(s.blocks));
    in_flight_[i] = std::move(in_flight_.back());
    in_flight_.pop_back();
    Flush();
  }
}

template <typename BlockAt>
void OspThreadSampler::FeedRange(size_t n, BlockAt block_at) {
  unflushed_blocks_ += n;
  size_t i = 0;
  while (i < n) {
    if (!in_flight_.empty()) {
      // Recording: every block goes to the subpaths in progress.
      const BlockId b = block_at(i++);
      Advance(b);
      if (skip_ > 0) {
        --skip_;
      } else {
        Start(b);
      }
      continue;
    }
    // Skipping: jump over the whole run at once.
    const uint64_t left = n - i;
    if (skip_ >= left) {
      skip_ -= left;
      break;
    }
    i += static_cast<size_t>(skip_);
    skip_ = 0;
    Start(block_at(i++));
  }
  Flush();
}

void OspThreadSampler::Feed(const BranchBatch& batch) {
  if (batch.gap_before) Gap();
  const BranchEvent* events = batch.events.data();
  FeedRange(batch.events.size(), [events](size_t i) { return BlockStartedBy(events[i]); });
}

void OspThreadSampler::FeedBlocks(std::span<const BlockId> blocks) {
  const BlockId* data = blocks.data();
  FeedRange(blocks.size(), [data](size_t i) { return data[i]; });
}

}  // namespace pathprof::profiles
