// Steps one stopped thread through one branch window (W taken branches, and the not-taken
// conditionals between them), by one of three mechanisms that yield the same events:
//
// kSingleStep: PTRACE_SINGLESTEP, one stop per instruction (~250 stops for a W = 32 window of
//   a tight loop). Works everywhere. A host that drops the trap after an emulated instruction
//   (CPUID) makes a step land one instruction late; the gap is decoded forward and counted
//   (lost_step_traps), so the window stays exact.
// kBreakpoints / kInt3: a software block stepper. From the thread's rip the code is walked ahead
//   (fall-through, and through direct jumps and calls, whose outcome is certain); each
//   conditional branch on the way gets a breakpoint on its taken target, and the walk ends with
//   a "terminal" breakpoint where it can predict no further (an indirect branch, a system call,
//   a revisited address, no breakpoint left). The thread then runs freely (PTRACE_CONT) to the
//   first breakpoint it meets: at a taken target, every conditional before it fell through and
//   that one was taken; at the terminal, the whole prediction held. Breakpoint addresses are
//   kept distinct from every address the prediction executes before them, so the stop address
//   alone says which way the path went. One stop per taken conditional instead of per
//   instruction. An indirect branch at a leg's start is single-stepped to learn its target.
//   - kBreakpoints uses the x86 debug registers (4: 3 targets and the terminal). The leg's first
//     instruction runs with EFLAGS.RF set, so its own address may carry a breakpoint.
//   - kInt3 writes int3 bytes into the text (software_breakpoints.h), for hosts whose
//     hypervisor never fires debug-register breakpoints. Up to 8 per leg, but no resume flag:
//     a leg never plants at its own start, so a loop costs two legs per iteration.
//
// Every stop is waited for with a deadline (ptrace_primitives.h). A breakpoint that never
// fires, or a trap that never comes, ends the window as kTimedOut after the thread has been
// interrupted; the caller then drops to a mechanism that works.
//
// PTRACE_SINGLEBLOCK (x86 DEBUGCTL.BTF) would give one stop per taken branch in hardware, but
// KVM and PVM guests ignore BTF (it stops after every instruction); the probe checks
// (step_probe.h), and it is not offered.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/stepping/step_mode.h"
#include "step_classifier.h"

namespace pathprof::stepping {

class SoftwareBreakpoints;

enum class WindowEnd : uint8_t {
  kComplete = 0,    // W taken branches
  kSyscall,         // a system call instruction is next (not executed): a short window
  kSignal,          // the thread stopped for something else (signal, event): see wait_status
  kExited,          // the thread is gone (wait_status holds its exit status)
  kStopLimit,       // max_stops reached
  kBudget,          // the window's stopped-time budget ran out
  kDecode,          // an instruction on the way could not be read or decoded
  kPtraceError,     // a ptrace request failed (thread vanished)
  kTimedOut,        // a stop did not come by its deadline: breakpoint never fired, trap lost
  kEmulationEnded,  // kEmulate: the emulator ended the window early (its reason counted apart)
  kTrapFlag,        // a stepped instruction (popf, iret) set the program's own trap flag
};
std::string_view WindowEndName(WindowEnd end);

struct SteppedWindow {
  std::vector<BranchEvent> events;
  uint32_t taken = 0;
  WindowEnd end = WindowEnd::kComplete;
  int wait_status = 0;           // kSignal / kExited: the status waitpid returned
  bool thread_stopped = true;    // false: still running (kExited, or an interrupt not yet seen)
  uint64_t single_steps = 0;     // PTRACE_SINGLESTEP stops
  uint64_t breakpoint_legs = 0;  // PTRACE_CONT runs that ended at a planted breakpoint
  uint64_t lost_step_traps = 0;  // steps that landed late and were decoded forward
  uint64_t instructions = 0;     // instructions retired in the window (REP iterations once)
  // account_interrupted_legs: a signal stopped the thread at a leg's start to which the leg
  // could have looped back: whether it ran a turn is unknown, and not in `events`.
  bool interrupted_leg_unknown = false;
  // kTimedOut after a single step: its trap (TRAP_TRACE) never came, and may yet, as the
  // thread's next signal stop. Any other TRAP_TRACE is the program's own trap flag at work.
  bool step_trap_owed = false;
  // Time spent creating the thread's debug registers (first use only: the kernel registers one
  // perf event per register), reported so the caller can see it; it counts as stopped time.
  uint64_t setup_ns = 0;
};

// Per-thread debug-register state kept between windows, so that a burst rewrites only the
// addresses that changed (each write of DR7 costs ~55 us on a VM, an address ~1.5 us).
struct DebugRegisterCache {
  bool armed = false;
  std::array<uint64_t, 4> address{};
  bool valid = false;  // addresses known to be in the registers
};

// The most instructions one stop of a window retires: a leg runs at most this many of the
// instructions it predicted (a single step, lost traps decoded across, fewer). The exact tracer
// sizes its windows by it so as never to run past an instruction limit.
inline constexpr uint64_t kMaxLegInstructions = 512;

struct WindowStepOptions {
  StepMode mode = StepMode::kSingleStep;
  uint32_t window_taken = 32;
  uint64_t max_stops = 20000;
  uint64_t stop_timeout_ns = 50'000'000;  // one leg or step; then the thread is interrupted
  // Wall time the window may take from its first stop (the thread is stopped for most of it);
  // checked every few stops. 0: no limit.
  uint64_t budget_ns = 0;
  // kSingleStep only: the window also ends, complete, once this many instructions retired (an
  // emulated window's length, to step the real thread through the same code). 0: no limit.
  uint64_t max_instructions = 0;
  // kBreakpoints / kInt3: when a signal stops the thread in the middle of a leg, the branches
  // the leg retired up to where it stands are added to the window (the exact tracer, which
  // loses nothing); where that cannot be told, interrupted_leg_unknown says so. Off (bursts),
  // the window ends with the leg's start.
  bool account_interrupted_legs = false;
};

// Where the stepper keeps per-thread and per-process mechanism state.
struct StepContext {
  InstructionReader* reader = nullptr;
  DebugRegisterCache* debug_registers = nullptr;  // kBreakpoints
  SoftwareBreakpoints* int3 = nullptr;            // kInt3 (left planted: the caller removes)
};

// `tid` is in a ptrace-stop at `rip` (interrupt or breakpoint stop) and is traced by this
// thread. Steps it until the window ends; the thread is left in a ptrace-stop (unless
// thread_stopped is false), with its debug registers disarmed. Under kInt3 the int3 bytes stay
// planted for the next window of the burst: the caller calls SoftwareBreakpoints::RemoveAll
// before resuming any thread.
SteppedWindow StepThreadWindow(pid_t tid, uint64_t rip, const StepContext& context,
                               const WindowStepOptions& options);

// Disarms the debug registers of `tid` (stopped) if armed. False when ptrace refused.
bool DisarmDebugRegisters(pid_t tid, DebugRegisterCache* dr);

}  // namespace pathprof::stepping
