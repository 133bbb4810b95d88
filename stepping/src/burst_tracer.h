// The body of the burst tracer process, pathprof-tracer (see ptrace_bursts.h): seizes the
// target's threads, runs bursts on schedule within the stopped-time cap, reports windows and
// counters over `data_fd`, and detaches every thread when `control_fd` closes, when its parent
// dies, on SIGTERM/SIGINT/SIGHUP, or when the target exits. Every wait has a deadline.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/stepping/step_probe.h"

namespace pathprof::stepping {

// Returns the process exit code for the tracer (0: detached cleanly). `parent` is the process
// that started it: a SIGTERM while it is still our parent comes from PR_SET_PDEATHSIG when only
// the spawning thread ended, and is not a stop request.
// `probe`: the step probe's result to decide the mode by; null: this process's
// (CachedStepProbe).
// `after_attach`: run once every thread is seized, before the first window, with the step mode
// chosen (the helper enters its sandbox there); what it returns, when not empty, is sent to the
// collector as a note.
using AfterAttach = std::function<std::string(StepMode mode)>;
int RunBurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd, pid_t parent,
                   const StepProbeResult* probe = nullptr, const AfterAttach& after_attach = {});

}  // namespace pathprof::stepping
