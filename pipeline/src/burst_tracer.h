// One ptrace-burst tracer (stepping::PtraceBurstCollector) on one process, started and counted
// the same way by every source that stops threads for windows: the ptrace source on each of its
// targets, the hybrid source on each process whose snapshot windows end too early.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/pipeline/live_source.h"
#include "pathprof/stepping/ptrace_bursts.h"

namespace pathprof::pipeline {

// Starts the tracer of `pid` with the session's sampling settings (`bursts_per_second` > 0
// overrides theirs), as the user targets.run_as names for it. Where that user may not attach
// and run_as is only a preference, it starts as the caller, and `note` says so.
Result<std::unique_ptr<stepping::PtraceBurstCollector>> StartBurstTracer(
    uint32_t pid, const SourceTargets& targets, stepping::PtraceBurstSink sink,
    double bursts_per_second, std::string* note);

// A tracer's counters by the stats' reasons (drops, decode errors, held back).
SourceLosses BurstLosses(const stepping::PtraceBurstStats& st);

}  // namespace pathprof::pipeline
