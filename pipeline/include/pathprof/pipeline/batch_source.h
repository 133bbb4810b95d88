// How the offline simulations (offline_sim.h, hpt_sweep.h, offline_stream_profiles.h) read a
// branch stream: as callbacks, so that the pipeline stays independent of where the branches come
// from (a synthetic workload in synth/, a .pbs file, a test's hand-made batches).
#pragma once

#include <functional>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::pipeline {

// Fills *batch with the next batch and returns true, or returns false at the end of the stream.
using NextBatchFn = std::function<Result<bool>(BranchBatch* batch)>;

// Opens the stream afresh, at its first batch: for analyses that read it more than once.
using OpenBatchesFn = std::function<Result<NextBatchFn>()>;

}  // namespace pathprof::pipeline
