// The body of the burst tracer process (see ptrace_bursts.h): seizes the target's threads,
// runs bursts on schedule, reports windows and counters over `data_fd`, and detaches every
// thread when `control_fd` closes, on SIGTERM/SIGINT/SIGHUP, or when the target exits.
#pragma once

#include "pathprof/collectors/ptrace_bursts.h"

namespace pathprof::collectors {

// Returns the process exit code for the tracer (0: detached cleanly).
int RunBurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd);

}  // namespace pathprof::collectors
