// A thread's signal masks as /proc/PID/task/TID/status gives them (SigPnd, ShdPnd, SigBlk,
// SigIgn): bit n-1 is signal n.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace pathprof::stepping {

struct SignalMasks {
  uint64_t pending = 0;  // the thread's own and the process's
  uint64_t blocked = 0;
  uint64_t ignored = 0;  // SIG_IGN (process-wide)
  bool Has(uint64_t mask, int sig) const { return (mask >> (sig - 1)) & 1; }
};

// Empty when the status is unreadable (the thread is gone) or a field is missing.
std::optional<SignalMasks> ReadSignalMasks(pid_t pid, pid_t tid);

// Whether a trap of a tracer's (a single step, a breakpoint) would change how the thread takes
// SIGTRAP: the kernel forces such a trap on the thread, and a forced signal that is blocked
// (the thread is in its SIGTRAP handler) or ignored has its handler reset to the default, so the
// program's next SIGTRAP of its own would kill it. True also when the masks cannot be read.
bool SigtrapForcingChangesHandler(pid_t pid, pid_t tid);

}  // namespace pathprof::stepping
