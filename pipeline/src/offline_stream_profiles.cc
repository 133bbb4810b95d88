#include "pathprof/pipeline/offline_stream_profiles.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>

#include "pathprof/profiles/hps_profiles.h"
#include "pathprof/profiles/osp_sampler.h"
#include "stream_profile_scoring.h"

namespace pathprof::pipeline {
namespace {

// The OSP reservoir fed by one sampler per thread (each thread's blocks are their own stream).
class SubpathSampling {
 public:
  static Result<SubpathSampling> Create(const StreamProfileOptions& o, uint64_t blocks) {
    profiles::OspConfig c = o.osp;
    c.expected_blocks = static_cast<double>(std::max<uint64_t>(blocks, 1));
    PATHPROF_ASSIGN_OR_RETURN(auto reservoir, profiles::OspReservoir::Create(c));
    return SubpathSampling(std::move(reservoir));
  }
  void Add(const BranchBatch& b) {
    auto& s = samplers_[b.tid];
    if (!s) s = std::make_unique<profiles::OspThreadSampler>(reservoir_.get(), b.tid);
    s->Feed(b);
  }
  // Flushes the samplers' block counts into the reservoir.
  void Flush() { samplers_.clear(); }
  const profiles::OspReservoir& reservoir() const { return *reservoir_; }

 private:
  explicit SubpathSampling(std::unique_ptr<profiles::OspReservoir> r) : reservoir_(std::move(r)) {}
  std::unique_ptr<profiles::OspReservoir> reservoir_;
  std::unordered_map<uint32_t, std::unique_ptr<profiles::OspThreadSampler>> samplers_;
};

// Exact call pairs and methods of the whole stream next to those of its samples.
class CallSampling {
 public:
  explicit CallSampling(const StreamProfileOptions& o) : window_(o.window), period_(o.period) {}
  // Fails when the bursty controller refuses its settings.
  Status Init(const StreamProfileOptions& o, CallProfile* profile);
  void Add(const BranchBatch& b);
  void Score(size_t top, CallProfile* profile) const;

 private:
  uint64_t window_, period_;
  std::optional<hwmodel::BurstyController> bursty_;
  profiles::HotCallPairs exact_pairs_, sampled_pairs_;
  profiles::HotMethods exact_methods_, sampled_methods_;
  std::vector<BranchBatch> sampled_;
  BranchBatch piece_;
};

Status CallSampling::Init(const StreamProfileOptions& o, CallProfile* profile) {
  if (o.bursty) {
    PATHPROF_ASSIGN_OR_RETURN(auto controller, hwmodel::BurstyController::Create(*o.bursty));
    bursty_.emplace(std::move(controller));
    profile->mode = SimMode::kBursty;
    profile->sampling_period = o.bursty->SamplingPeriod();
  } else if (o.window) {
    profile->mode = SimMode::kWindow;
    profile->sampling_period = static_cast<double>(o.period);
  }
  return Status::Ok();
}

void CallSampling::Add(const BranchBatch& b) {
  exact_pairs_.AddBatch(b);
  exact_methods_.AddBatch(b);
  sampled_.clear();
  if (bursty_) {
    bursty_->Apply(b, &sampled_);
  } else if (window_) {
    for (const auto& [from, to] :
         hwmodel::SliceTakenWindows(b.events, window_, window_ * period_, 0)) {
      piece_.window = true;
      piece_.events.assign(b.events.begin() + static_cast<ptrdiff_t>(from),
                           b.events.begin() + static_cast<ptrdiff_t>(to));
      sampled_.push_back(piece_);
    }
  }
  if (!bursty_ && !window_) {
    sampled_pairs_.AddBatch(b);
    sampled_methods_.AddBatch(b);
  }
  for (const auto& s : sampled_) {
    sampled_pairs_.AddBatch(s);
    sampled_methods_.AddBatch(s);
  }
}

void CallSampling::Score(size_t top, CallProfile* profile) const {
  profile->calls_exact = exact_pairs_.total();
  profile->calls_sampled = sampled_pairs_.total();
  const double scale = profile->sampling_period;
  profile->pairs = RankCallPairs(exact_pairs_, sampled_pairs_, scale, top);
  profile->methods = RankMethods(exact_methods_, sampled_methods_, scale, top);
}

// f starts at n / (m G) (eq. 2.13), so the reservoir needs the stream's length up front.
Result<uint64_t> CountBlocks(const OpenBatchesFn& open) {
  uint64_t blocks = 0;
  PATHPROF_RETURN_IF_ERROR(
      ForEachBatch(open, [&](const BranchBatch& b) { blocks += b.events.size(); }));
  return blocks;
}

}  // namespace

Result<StreamProfiles> ProfileStream(const StreamProfileOptions& o, const OpenBatchesFn& open) {
  std::optional<SubpathSampling> subpaths;
  if (o.subpaths) {
    PATHPROF_ASSIGN_OR_RETURN(uint64_t blocks, CountBlocks(open));
    PATHPROF_ASSIGN_OR_RETURN(auto sampling, SubpathSampling::Create(o, blocks));
    subpaths.emplace(std::move(sampling));
  }
  StreamProfiles r;
  CallSampling calls(o);
  PATHPROF_RETURN_IF_ERROR(calls.Init(o, &r.calls));
  Status pass = ForEachBatch(open, [&](const BranchBatch& b) {
    r.branches += b.events.size();
    if (subpaths) subpaths->Add(b);
    if (o.calls) calls.Add(b);
  });
  if (subpaths) subpaths->Flush();
  PATHPROF_RETURN_IF_ERROR(pass);
  if (subpaths) {
    profiles::OspReportOptions ro;
    ro.top_k = o.top;
    ro.confidence = o.confidence;
    PATHPROF_ASSIGN_OR_RETURN(auto report, profiles::BuildOspReport(subpaths->reservoir(), ro));
    PATHPROF_ASSIGN_OR_RETURN(r.subpaths, ScoreSubpaths(std::move(report), open));
    r.subpaths.max_length = o.osp.lengths.max_length();
  }
  if (o.calls) calls.Score(o.top, &r.calls);
  return r;
}

}  // namespace pathprof::pipeline
