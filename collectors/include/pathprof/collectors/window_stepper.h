// Steps one stopped thread through one branch window (W taken branches, and the not-taken
// conditionals between them), by one of two mechanisms that yield the same events:
//
// kSingleStep: PTRACE_SINGLESTEP, one stop per instruction (~250 stops for a W = 32 window of
//   a tight loop). Works everywhere.
// kBreakpoints: a software block stepper on the x86 debug registers. From the thread's rip the
//   code is walked ahead (fall-through, and through direct jumps and calls, whose outcome is
//   certain); each conditional branch on the way gets an execute breakpoint on its taken target,
//   and the walk ends with a "terminal" breakpoint where it can predict no further (an indirect
//   branch, a system call, a revisited address, 4 debug registers used). The thread then runs
//   freely (PTRACE_CONT) to the first breakpoint it meets: at a taken target, every conditional
//   before it fell through and that one was taken; at the terminal, the whole prediction held.
//   Breakpoint addresses are kept distinct from every address the prediction executes before
//   them, so the stop address alone says which way the path went. One stop per taken
//   conditional or loop iteration instead of per instruction. The leg's first instruction runs
//   with EFLAGS.RF set, so its own address may carry a breakpoint (for the loop's next
//   iteration). An indirect branch at a leg's start is single-stepped to learn its target.
//
// PTRACE_SINGLEBLOCK (x86 DEBUGCTL.BTF) would give one stop per taken branch in hardware, but
// KVM guests ignore BTF: on the project's VM it stops after every instruction, like a single
// step (measured; see docs/performance.md), so it is not offered.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pathprof/collectors/step_classifier.h"
#include "pathprof/core/branch.h"

namespace pathprof::collectors {

enum class StepMode : uint8_t { kSingleStep = 0, kBreakpoints = 1 };
std::string_view StepModeName(StepMode mode);
// "step" / "breakpoints"; false on anything else.
bool ParseStepMode(std::string_view text, StepMode* out);

enum class WindowEnd : uint8_t {
  kComplete = 0,  // W taken branches
  kSyscall,       // a system call instruction is next (not executed): a short window
  kSignal,        // the thread stopped for something else (signal, event): see wait_status
  kExited,        // the thread is gone (wait_status holds its exit status)
  kStopLimit,     // max_stops reached
  kDecode,        // an instruction on the way could not be read or decoded
  kPtraceError,   // a ptrace request failed (thread vanished)
};

struct SteppedWindow {
  std::vector<BranchEvent> events;
  uint32_t taken = 0;
  WindowEnd end = WindowEnd::kComplete;
  int wait_status = 0;           // kSignal / kExited: the status waitpid returned
  uint64_t single_steps = 0;     // PTRACE_SINGLESTEP stops
  uint64_t breakpoint_legs = 0;  // PTRACE_CONT runs that ended at a planted breakpoint
  uint64_t instructions = 0;     // instructions retired in the window (REP iterations once)
  // Time spent creating the thread's breakpoints (first use only: ~37 ms on a VM, the kernel
  // registers one perf event per register). The burst pacing leaves it out: it is not a cost
  // that repeats with the rate.
  uint64_t setup_ns = 0;
};

// Per-thread debug-register state kept between windows, so that a burst rewrites only the
// addresses that changed (each write of DR7 costs ~55 us on a VM, an address ~1.5 us).
struct DebugRegisterCache {
  bool armed = false;
  std::array<uint64_t, 4> address{};
  bool valid = false;  // addresses known to be in the registers
};

struct WindowStepOptions {
  StepMode mode = StepMode::kSingleStep;
  uint32_t window_taken = 32;
  uint64_t max_stops = 20000;
};

// `tid` is in a ptrace-stop at `rip` (interrupt or breakpoint stop) and is traced by this
// thread. Steps it until the window ends; the thread is left in a ptrace-stop (unless it exited
// or end is kSignal, when the caller handles wait_status), with its debug registers disarmed.
SteppedWindow StepThreadWindow(pid_t tid, uint64_t rip, InstructionReader& reader,
                               const WindowStepOptions& options, DebugRegisterCache* dr);

// Disarms the debug registers of `tid` (stopped) if armed. False when ptrace refused.
bool DisarmDebugRegisters(pid_t tid, DebugRegisterCache* dr);

}  // namespace pathprof::collectors
