// Block stepping for the exact tracer (exact_tracer.h): a stopped thread is advanced by the
// window stepper's breakpoint legs (window_stepper.h: breakpoints on every taken target ahead,
// the thread run natively to the first one) instead of by one single step per instruction, and
// what it retired is given back as the single-step tracer records it: the same branch events,
// with the same instruction counts. One stop per taken conditional instead of per instruction.
//
// Where the legs cannot say what ran, nothing is guessed. A signal that stops the thread in the
// middle of a leg leaves it on the leg's predicted path, which says what ran up to there
// (WindowStepOptions::account_interrupted_legs), except at a leg's start that the leg could
// loop back to (debug registers only): that is reported as unknown, and the caller marks a gap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/stepping/instruction_reader.h"
#include "window_stepper.h"

namespace pathprof::stepping {

struct BlockRunOptions {
  StepMode mode = StepMode::kBreakpoints;  // kBreakpoints or kInt3
  uint64_t max_stops = 4096;               // stops before the thread is handed back
  uint64_t stop_timeout_ns = 2'000'000'000;
};

struct BlockRun {
  enum class End : uint8_t {
    kStopped,   // stopped between instructions at `rip`: a system call, an undecodable
                // instruction or max_stops is next; the caller resumes it
    kSignal,    // stopped for something of the program's (wait_status) at `rip`
    kExited,    // the thread is gone (wait_status); what its last leg ran is lost with it
    kTimedOut,  // a breakpoint never fired: the thread may still be running (thread_stopped)
    kLost,      // a ptrace request failed: the thread vanished under us
  };
  End end = End::kStopped;
  int wait_status = 0;
  bool thread_stopped = true;
  // Retired from the start address, in order; the first event's instructions count from the
  // start, tail_instructions those after the last event (from the start where there is none).
  std::vector<BranchEvent> events;
  uint32_t tail_instructions = 0;
  uint64_t instructions = 0;  // retired in all
  // kStopped and kSignal: false where the path to `rip` is not known (the caller marks a gap
  // after `events`).
  bool path_known = true;
  uint64_t rip = 0;
  uint64_t breakpoint_legs = 0;
  uint64_t single_steps = 0;
  uint64_t lost_step_traps = 0;
};

// `tid` is in a ptrace stop at `rip`, traced by this thread, its debug registers (kBreakpoints)
// or the process's int3 bytes (kInt3) in `context`. Under kInt3 the bytes stay planted: remove
// them before any thread runs an instruction the tracer did not plan.
BlockRun RunBlocks(pid_t tid, uint64_t rip, const StepContext& context,
                   const BlockRunOptions& options);

}  // namespace pathprof::stepping
