// The top of a stopped thread's user stack, read by the burst tracer with each window so that
// the collector can unwind it and attribute the window to its calling context (docs/profiles.md,
// "Hot paths per calling context").
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "pathprof/core/branch.h"

namespace pathprof::stepping {

// How much of the stack is read from the stack pointer up: enough for the frames of most
// programs up to main (perf's --call-graph dwarf default is 8 KiB), at the cost of one
// process_vm_readv of two or three pages per window. A deeper stack unwinds to where the copy
// ends and its context hangs under the PCCT's "[truncated]" root.
inline constexpr size_t kThreadStackBytes = 8192;
// The most a window message may carry (a reader refuses more as malformed).
inline constexpr size_t kMaxThreadStackBytes = 65536;

// `tid` (of process `pid`) is in a ptrace stop: reads its registers (DWARF numbering) and up to
// `max_bytes` of stack from its stack pointer, fewer where the mapping ends (read a page at a
// time, so the readable prefix is kept). A failure leaves `error` set (errno) and no registers.
ThreadStack ReadThreadStack(pid_t pid, pid_t tid, size_t max_bytes = kThreadStackBytes);

}  // namespace pathprof::stepping
