// SIGINT, SIGTERM and SIGHUP while pathctl collects (run, bursts, trace): they end the collection
// instead of pathctl, which then reports what it has and exits as the signal would have ended
// it (as perf record does: the shell sees 128 + the signal, and a script's `trap` still runs).
#pragma once

#include <atomic>

namespace pathctl {

// Installs the handlers; the signal is only noted (InterruptSignal), the code that waits
// looks at it between its bounded waits.
void CatchInterrupts();
// The signal that arrived since CatchInterrupts, or 0.
int InterruptSignal();
// True once a signal arrived: for code below pathctl that polls a flag (the exact tracer).
const std::atomic<bool>* InterruptFlag();
// After the report: restores the signal's default action and raises it again, so pathctl ends
// as the signal would have ended it. Returns (does nothing) when no signal arrived.
void ExitAsInterrupted();

}  // namespace pathctl
