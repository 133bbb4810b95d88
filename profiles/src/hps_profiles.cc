#include "pathprof/profiles/hps_profiles.h"

#include <string>

namespace pathprof::profiles {

Status HpsSupport(HpsProfileType type) {
  switch (type) {
    case HpsProfileType::kHotCallPair:
    case HpsProfileType::kHotMethod:
      return Status::Ok();
    case HpsProfileType::kHotDataStream:
      return Error(ErrorCode::kUnsupported,
                   "hot data streams need the data addresses of loads and stores; LBR and Intel "
                   "PT record control flow only, so pathprof cannot build this profile (use a "
                   "memory-access sampler such as PEBS load latency instead)");
  }
  return Error(ErrorCode::kInvalidArgument,
               "unknown HPS profile type " + std::to_string(static_cast<int>(type)));
}

namespace {

// Visits the taken calls of a batch, counting what it sees.
template <typename F>
void ForEachCall(const BranchBatch& batch, HpsStats& stats, F&& f) {
  ++stats.batches;
  if (batch.window) ++stats.window_batches;
  stats.events += batch.events.size();
  for (const BranchEvent& e : batch.events) {
    if (!IsCall(e.kind)) continue;
    if (!e.taken) {
      ++stats.untaken_calls;
      continue;
    }
    ++stats.calls;
    f(e);
  }
}

}  // namespace

void HotCallPairs::AddBatch(const BranchBatch& batch) {
  ForEachCall(batch, stats_, [this](const BranchEvent& e) {
    counts_.Add(CallPair{e.from, e.to}, 1);
  });
}

void HotMethods::AddBatch(const BranchBatch& batch) {
  ForEachCall(batch, stats_, [this](const BranchEvent& e) { counts_.Add(e.to, 1); });
}

Status HotMethods::AddStackSample(const StackSample& sample) {
  if (sample.frames.empty() || sample.weight == 0) {
    ++stats_.rejected_samples;
    return Error(ErrorCode::kInvalidArgument,
                 "hot-method sample of tid " + std::to_string(sample.tid) +
                     " has no frames or weight 0: the collector must send a leaf frame");
  }
  ++stats_.samples;
  counts_.Add(sample.frames.front().function, sample.weight);
  return Status::Ok();
}

}  // namespace pathprof::profiles
