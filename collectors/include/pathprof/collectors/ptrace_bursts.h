// ptrace bursts: a software LBR for hosts without a PMU (most VMs). The collector seizes every
// thread of a running process; for each burst it interrupts one thread, single-steps it until it
// has retired W taken branches (the LBR depth, 32 by default), hands the exact window on as a
// BranchBatch (window = true, gap_before = true) and lets the thread run on.
//
// Rate. The BurstyController (paper 001) counts calls and back-edges, but those are invisible
// between bursts, when the program runs freely. So its burst_length maps to W (counted in taken
// branches, like LBR) and its sample_interval becomes a time interval: bursts come at
// `bursts_per_second` on average, each gap drawn uniformly from [0.5, 1.5] times the mean so that
// windows do not alias with periodic program behaviour. The gap is also stretched so that the
// time threads spend stopped stays under `max_stopped_fraction` of wall time: overhead is bounded
// whatever a step costs on this host.
//
// Safety. All ptrace calls come from one dedicated tracer *process*, forked by Start. A
// single-stepped thread sits in a SIGTRAP signal-delivery stop between steps; if its tracer dies
// there, the kernel detaches it and delivers that SIGTRAP, killing the target. A tracer that lives
// in its own small process survives a crash or SIGKILL of the collector's host (daemon, pathctl):
// it sees its control pipe close, finishes the step it is in, and detaches every thread. Stop()
// and the destructor do the same. Only a SIGKILL of the tracer process itself mid-burst can still
// take the target down (a kernel limitation; documented, not papered over).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::collectors {

struct PtraceBurstOptions {
  pid_t pid = 0;                         // target process (all of its threads are traced)
  uint32_t window_taken = 32;            // W: taken branches per window (LBR depth)
  double bursts_per_second = 20;         // mean burst rate (see docs/performance.md for the cost)
  double max_stopped_fraction = 0.04;    // cap on the share of wall time threads spend stopped
  uint64_t max_steps_per_burst = 20000;  // a burst that needs more steps is aborted
  uint64_t seed = 0;                     // jitter and thread choice; 0: from the clock

  Status Validate() const;
};

// Counters of one session; nothing is dropped without being counted here.
struct PtraceBurstStats {
  uint64_t bursts = 0;             // bursts started (a thread was interrupted)
  uint64_t windows = 0;            // windows emitted
  uint64_t windows_short = 0;      // of those, ended before W taken branches (syscall ahead)
  uint64_t steps = 0;              // single steps
  uint64_t events = 0;             // branch events emitted (taken and not taken)
  uint64_t taken = 0;              // taken branches emitted
  uint64_t aborted_syscall = 0;    // thread was blocked in a system call: nothing to step
  uint64_t aborted_signal = 0;     // a signal arrived mid-burst (forwarded; window dropped)
  uint64_t aborted_exit = 0;       // the thread exited mid-burst
  uint64_t aborted_steps = 0;      // max_steps_per_burst reached
  uint64_t aborted_decode = 0;     // an instruction could not be read or decoded
  uint64_t skipped_no_thread = 0;  // burst time came but no thread was runnable
  uint64_t threads_attached = 0;   // at start and by clone
  uint64_t threads_exited = 0;
  uint64_t signals_forwarded = 0;  // signal-delivery stops re-injected
  uint64_t group_stops = 0;        // job-control stops passed through (PTRACE_LISTEN)
  uint64_t execs = 0;              // the target exec'd: images changed, windows restart
  uint64_t stopped_ns = 0;         // total time threads spent stopped by bursts
  uint64_t elapsed_ns = 0;         // session wall time so far
  bool target_exited = false;
  int target_exit_status = -1;  // exit code, or 128 + signal; -1 when unknown or running
  bool detached = false;        // the tracer detached every thread and exited cleanly

  bool operator==(const PtraceBurstStats&) const = default;
};

struct PtraceBurstSink {
  // Each window, on the collector's reader thread, in the order the tracer emitted them.
  std::function<void(const BranchBatch&)> on_window;
  // Notes worth a log line (an exec, the session end); optional.
  std::function<void(const std::string&)> on_note;
};

class PtraceBurstCollector {
 public:
  // Checks the target (exists, not already traced, ptrace permitted), forks the tracer process
  // and returns once every thread is seized, or with the reason it could not be.
  static Result<std::unique_ptr<PtraceBurstCollector>> Start(const PtraceBurstOptions& options,
                                                             PtraceBurstSink sink);
  ~PtraceBurstCollector();  // Stop()
  PtraceBurstCollector(const PtraceBurstCollector&) = delete;
  PtraceBurstCollector& operator=(const PtraceBurstCollector&) = delete;

  // Detaches from every thread (none is left stopped or traced), waits for the tracer process
  // and returns the final counters. Idempotent.
  PtraceBurstStats Stop();
  // Counters as of the last burst the tracer reported.
  PtraceBurstStats stats() const;
  // True once the target has exited (the tracer then ends by itself).
  bool finished() const { return finished_.load(); }
  // Blocks until the target exits or `timeout_ms` passes; returns finished().
  bool WaitFinished(int timeout_ms);
  pid_t tracer_pid() const { return tracer_pid_; }

 private:
  PtraceBurstCollector() = default;
  void ReadLoop();

  PtraceBurstSink sink_;
  pid_t tracer_pid_ = -1;
  int data_fd_ = -1;     // tracer -> us: framed messages
  int control_fd_ = -1;  // us -> tracer: closing it asks the tracer to detach and exit
  std::thread reader_;
  mutable std::mutex mu_;
  PtraceBurstStats stats_;
  std::string error_;
  std::atomic<bool> finished_{false};
  bool stopped_ = false;
};

// Why this process cannot be traced, or Ok: it exists, no one traces it (TracerPid), and the
// Yama ptrace_scope / capability setup allows us. Messages say how to fix it.
Status CheckTraceable(pid_t pid);

}  // namespace pathprof::collectors
