// The scoring halves of offline_stream_profiles.cc (the subpaths counted exactly in a second
// pass, the call pairs and methods ranked against their exact counts) and the stream walk they
// share.
#pragma once

#include "pathprof/pipeline/offline_stream_profiles.h"
#include "pathprof/profiles/hps_profiles.h"

namespace pathprof::pipeline {

// Opens the stream afresh and calls fn(batch) for each of its batches.
template <typename Fn>
Status ForEachBatch(const OpenBatchesFn& open, Fn&& fn) {
  PATHPROF_ASSIGN_OR_RETURN(NextBatchFn next, open());
  BranchBatch batch;
  for (;;) {
    PATHPROF_ASSIGN_OR_RETURN(bool more, next(&batch));
    if (!more) return Status::Ok();
    fn(static_cast<const BranchBatch&>(batch));
  }
}

// Scores `report` against a pass over the stream that counts its subpaths exactly.
Result<SubpathProfile> ScoreSubpaths(profiles::OspReport report, const OpenBatchesFn& open);

// Ranks the sampled counts, scaled by `scale`, against the exact ones; lists the top `top`.
CallRanking RankCallPairs(const profiles::HotCallPairs& exact,
                          const profiles::HotCallPairs& sampled, double scale, size_t top);
CallRanking RankMethods(const profiles::HotMethods& exact, const profiles::HotMethods& sampled,
                        double scale, size_t top);

}  // namespace pathprof::pipeline
