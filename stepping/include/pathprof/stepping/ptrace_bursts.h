// ptrace bursts: a software LBR for hosts without a PMU (most VMs). A tracer process seizes
// every thread of a running process; for each burst it interrupts one thread, steps it (debug-
// register breakpoints, int3 breakpoints or single steps; window_stepper.h) until it has retired
// W taken branches (the LBR depth, 32 by default), hands the exact window on as a BranchBatch
// (window = true, gap_before = true) and lets the thread run on.
//
// Rate. The BurstyController ([HPS 2005], docs/references.md) counts calls and back-edges, but
// those are invisible between bursts, when the program runs freely. So its burst_length maps to W
// (counted in taken branches, like LBR) and its sample_interval becomes a time interval: bursts
// come at `bursts_per_second` on average, each gap drawn uniformly from [0.5, 1.5] times the mean
// so that windows do not alias with periodic program behaviour. Every stop the tracer causes
// (bursts, and the stops of events it traces: exec, fork, signals, threads parked at an int3) is
// charged against `max_stopped_fraction` over a sliding one-second window: a burst starts only when
// the last second leaves room, and ends when it has used that room. So the cap holds over every
// second, whatever a stop costs on this host.
//
// Safety. The tracer is a process of its own (pathprof-tracer, started with posix_spawn; see
// tracer_helper.h): it dies with its parent (PR_SET_PDEATHSIG, checked after setting it), and
// every wait in it has a deadline, so a stop request, the parent's death or SIGTERM makes it
// detach every thread and exit within a second, whatever the host does with breakpoints and
// traps. If the tracer itself is SIGKILLed the kernel detaches the threads; a thread that was
// in a single-step trap at that instant gets that SIGTRAP (a kernel limitation, documented).
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/stepping/step_mode.h"

namespace pathprof::stepping {

// Who the tracer process runs as, when not as its (root) parent: a non-admin's session traces
// with the requester's uid and the target's gid, without capabilities or supplementary groups.
struct TracerCredentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct PtraceBurstOptions {
  pid_t pid = 0;               // target process (all of its threads are traced)
  uint32_t window_taken = 32;  // W: taken branches per window (LBR depth)
  // Mean burst rate; 0: the step mode's own (kDefaultBurstRate, or kEmulatedBurstRate for
  // emulated windows, whose one stop each makes the stopped-time cap, not the rate, the limit).
  double bursts_per_second = 0;
  double max_stopped_fraction = 0.04;    // cap on the share of any second threads spend stopped
  uint64_t max_steps_per_burst = 20000;  // a burst that needs more stops is aborted
  // How a window is stepped; empty: what the step probe says works best here (step_probe.h).
  std::optional<StepMode> step_mode;
  uint64_t seed = 0;                        // jitter and thread choice; 0: from the clock
  std::optional<TracerCredentials> run_as;  // empty: the tracer keeps the caller's credentials
  // kEmulate: after each emulated window, single-step the thread through the same instructions
  // and compare (PtraceBurstStats::verify_*). For tests and diagnosis: each window then costs
  // hundreds of stops.
  bool verify_emulation = false;

  static constexpr double kDefaultBurstRate = 20;
  static constexpr double kEmulatedBurstRate = 1000;
  double RateFor(StepMode mode) const {
    if (bursts_per_second > 0) return bursts_per_second;
    return mode == StepMode::kEmulate ? kEmulatedBurstRate : kDefaultBurstRate;
  }

  Status Validate() const;
};

// Slots for the emulator's window-end reasons (emulator::EmulationEnd), and how many of the
// instructions that ended emulated windows are reported by name.
inline constexpr size_t kEmulationEndSlots = 20;
inline constexpr size_t kEndingInstructions = 16;
std::string_view EmulationEndReason(size_t slot);     // "complete", "syscall", "unmodelled", ...
std::string_view InstructionName(uint16_t mnemonic);  // "vpcmpeqb"

// One instruction that ended emulated windows, and how often.
struct EndingInstruction {
  uint16_t mnemonic = 0;  // ZydisMnemonic (InstructionName)
  uint8_t reason = 0;     // the EmulationEnd slot
  uint8_t reserved[5] = {};
  uint64_t windows = 0;
  bool operator==(const EndingInstruction&) const = default;
};

// Counters of one session; nothing is dropped without being counted here. Crosses the pipe from
// the tracer as bytes: plain fields only (the hello message checks the layout matches).
struct PtraceBurstStats {
  uint64_t bursts = 0;                // bursts started (a thread was interrupted)
  uint64_t windows = 0;               // windows emitted
  uint64_t windows_short = 0;         // of those, ended before W taken branches (syscall ahead)
  uint64_t steps = 0;                 // single steps
  uint64_t breakpoint_legs = 0;       // free runs ended at a planted breakpoint
  uint64_t lost_step_traps = 0;       // steps that landed late (trap lost) and were decoded across
  uint64_t instructions = 0;          // instructions retired inside emitted windows
  uint64_t step_mode_fallbacks = 0;   // a mechanism failed at run time: switched to the next
  uint64_t events = 0;                // branch events emitted (taken and not taken)
  uint64_t taken = 0;                 // taken branches emitted
  uint64_t aborted_syscall = 0;       // thread was blocked in a system call: nothing to step
  uint64_t aborted_signal = 0;        // a signal arrived mid-burst (forwarded; window dropped)
  uint64_t aborted_exit = 0;          // the thread exited mid-burst
  uint64_t aborted_steps = 0;         // max_steps_per_burst reached
  uint64_t aborted_budget = 0;        // the stopped-time cap ran out mid-window
  uint64_t aborted_timeout = 0;       // a breakpoint never fired or a trap never came
  uint64_t aborted_decode = 0;        // an instruction could not be read or decoded
  uint64_t aborted_ptrace = 0;        // a ptrace request failed mid-window
  uint64_t interrupt_timeouts = 0;    // a thread did not stop for PTRACE_INTERRUPT in time
  uint64_t skipped_no_thread = 0;     // burst time came but no thread was runnable
  uint64_t deferred_cap = 0;          // burst time came but the last second had no room left
  uint64_t windows_dropped_pipe = 0;  // the collector did not keep up: window not sent
  uint64_t stacks_read = 0;           // windows sent with the top of their thread's stack
  uint64_t stacks_unreadable = 0;     // windows sent without it: registers or stack unreadable
  uint64_t threads_attached = 0;      // seized, at start and by later scans
  uint64_t threads_exited = 0;
  uint64_t signals_forwarded = 0;   // signal-delivery stops re-injected
  uint64_t group_stops = 0;         // job-control stops passed through (PTRACE_LISTEN)
  uint64_t execs = 0;               // the target exec'd: images changed, windows restart
  uint64_t forks_cleaned = 0;       // fork children whose copy of our int3s was restored
  uint64_t int3_parked = 0;         // other threads that met an int3 of ours and waited
  uint64_t int3_writes = 0;         // bytes written into the text (plant and restore)
  uint64_t event_stops = 0;         // stops of traced events (exec, fork, signal, int3 parking)
  uint64_t stopped_ns = 0;          // total time threads spent stopped by us, events included
  uint64_t event_stopped_ns = 0;    // of which, event stops
  uint64_t max_stopped_ppm_1s = 0;  // the most stopped time seen in any one second, per million
  // The longest single burst stop: what one burst can take past the cap's room when the tracer
  // waits for a CPU while the thread is stopped (the cap admits a burst, it cannot shorten it).
  uint64_t longest_stop_ns = 0;
  uint64_t elapsed_ns = 0;  // session wall time so far
  // Emulated windows (kEmulate): one stop each, the branches run in the tracer's emulator.
  uint64_t emulated_windows = 0;  // windows emulated (emitted ones are counted in windows)
  uint64_t emulated_instructions = 0;
  uint64_t emulation_ns = 0;            // time in the emulator; the thread is stopped meanwhile
  uint64_t emulation_pages_read = 0;    // pages read from the target (the rest came cached)
  uint64_t emulation_resets = 0;        // a read-only mapping changed: cached code dropped
  uint64_t emulation_vector_loads = 0;  // windows that needed the vector registers
  std::array<uint64_t, kEmulationEndSlots> emulation_ends{};  // by EmulationEndReason
  std::array<EndingInstruction, kEndingInstructions> ending_instructions{};  // most first
  // verify_emulation: each emulated window single-stepped and compared.
  uint64_t verified = 0;              // compared in full
  uint64_t verify_identical = 0;      // every event and the instruction count equal
  uint64_t verify_diverged = 0;       // the real thread retired other branches
  uint64_t verify_state_differs = 0;  // identical events, but registers differed at the end
  uint64_t verify_unchecked = 0;      // stepping ended early (a signal, an exit, too long)
  // Bursts that found SIGTRAPs of the thread's own in play: it single-steps itself (its trap
  // flag set), or, for a window that traps, it blocks or ignores SIGTRAP (in its handler),
  // where a trap of ours would reset its handler. Neither stepped nor emulated then. Also a
  // stepped window that ran the program's own popf setting the flag: no window from it.
  uint64_t aborted_trap_flag = 0;
  // Interrupt stops (a burst's, or the detach's) that found a thread in a system call returning
  // EINTR rather than restarting (epoll_wait, sigtimedwait, recv with a timeout: it fell asleep
  // after it was found running): restarted, as the kernel restarts the others; or left, when a
  // signal of the program's own was pending (its EINTR) or the registers could not be set.
  uint64_t syscalls_restarted = 0;
  uint64_t syscalls_left_interrupted = 0;
  uint64_t traps_forwarded = 0;  // of signals_forwarded, SIGTRAPs of the program's own trap flag
  uint8_t step_mode = 0;         // StepMode in use now
  bool target_exited = false;
  bool detached = false;            // the tracer detached every thread and exited cleanly
  int32_t target_exit_status = -1;  // exit code, or 128 + signal; -1 when unknown or running

  bool operator==(const PtraceBurstStats&) const = default;
};

struct PtraceBurstSink {
  // Each window, on the collector's reader thread, in the order the tracer emitted them.
  std::function<void(const BranchBatch&)> on_window;
  // Notes worth a log line (an exec, a fallback, the session end); optional.
  std::function<void(const std::string&)> on_note;
  // The target exec'd: its images changed; optional.
  std::function<void()> on_exec;
};

class PtraceBurstCollector {
 public:
  // Checks the target (exists, not already traced, not this process or its lineage), starts the
  // tracer process and returns once every thread is seized, or with the reason it could not be
  // (within ~10 s, whatever happens).
  static Result<std::unique_ptr<PtraceBurstCollector>> Start(const PtraceBurstOptions& options,
                                                             PtraceBurstSink sink);
  ~PtraceBurstCollector();  // Stop()
  PtraceBurstCollector(const PtraceBurstCollector&) = delete;
  PtraceBurstCollector& operator=(const PtraceBurstCollector&) = delete;

  // Asks the tracer to detach from every thread (none is left stopped or traced) and waits for
  // it, at most ~1 s: a tracer that has not exited by then is killed (counted in killed()).
  // Returns the final counters. Idempotent.
  PtraceBurstStats Stop();
  // The stop request alone, without waiting: a session stopping many collectors asks them all
  // first, so that they detach in parallel. Idempotent; Stop() still waits.
  void RequestStop();
  // Counters as of the last burst the tracer reported.
  PtraceBurstStats stats() const;
  // True once the tracer has ended (target exited, or the tracer died: see failure()).
  bool finished() const { return finished_.load(); }
  // Blocks until finished() or `timeout_ms` passes; returns finished().
  bool WaitFinished(int timeout_ms);
  // Why the tracer ended without a clean detach ("killed by signal 9"), or "".
  std::string failure() const;
  // The step mode the tracer started with.
  StepMode step_mode() const { return step_mode_; }
  bool killed() const { return killed_; }
  pid_t tracer_pid() const { return tracer_pid_; }

 private:
  PtraceBurstCollector() = default;
  void ReadLoop();
  void Reap(int timeout_ms);

  PtraceBurstSink sink_;
  pid_t tracer_pid_ = -1;
  int pidfd_ = -1;
  int data_fd_ = -1;     // tracer -> us: framed messages
  int control_fd_ = -1;  // us -> tracer: closing it asks the tracer to detach and exit
  StepMode step_mode_ = StepMode::kSingleStep;
  int quit_timeout_ms_ = 0;  // how long the tracer may take to finish its window and detach
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable finished_cv_;
  PtraceBurstStats stats_;
  std::string failure_;
  int tracer_status_ = -1;
  std::atomic<bool> finished_{false};
  bool stopped_ = false;
  bool killed_ = false;
};

// Why this process cannot be traced, or Ok: it exists, is a process (not a thread), no one
// traces it (TracerPid), and it is not this process, one of its ancestors or one of pathprof's
// own helper processes (tracing those would wedge the tracer). Messages say how to fix it.
Status CheckTraceable(pid_t pid);

}  // namespace pathprof::stepping
