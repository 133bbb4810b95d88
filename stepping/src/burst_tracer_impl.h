// The burst tracer's state and the work it does, one job per file (the process's entry point is
// burst_tracer.h):
// - burst_tracer.cc: start-up (signals, seizing threads), the loop that schedules bursts within
//   the stopped-time cap, and one burst (a thread interrupted, its window taken, its stop timed);
// - burst_thread_pick.cc: which thread a burst interrupts (one found running, never a sleeper);
// - burst_windows.cc: one window of a stopped thread, stepped or emulated, and its counters;
// - burst_step_mode.cc: the step mode in use, its ptrace options and its fallbacks;
// - burst_stops.cc: every stop that is not a window's (signals, traps, clones, forks, exec,
//   exits) and the detach at the end;
// - burst_output.cc: windows, counters and notes to the collector.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "burst_tracer.h"
#include "emulated_windows.h"
#include "interrupted_syscall.h"
#include "pathprof/core/clock.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/stepping/step_probe.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"
#include "thread_stack_reader.h"
#include "window_stepper.h"

namespace pathprof::stepping::burst {

inline constexpr uint64_t kStopTimeoutNs = 50'000'000;    // one leg, step or interrupt
inline constexpr uint64_t kDetachBudgetNs = 400'000'000;  // detaching every thread at the end
inline constexpr uint64_t kSecondNs = 1'000'000'000;
inline constexpr int kTimeoutsBeforeFallback = 3;  // legs timed out in a mode that has worked
inline constexpr size_t kMaxSeizePerScan = 256;
inline constexpr size_t kMaxThreadsChecked = 64;  // per pick: /proc reads stay bounded
// A thread found not running is read again only after a wait that doubles with each such read
// in a row, from 1 ms to 16 ms: each read of a stat file cost more than a tenth of the tracer's
// CPU on zstd (a sleeping main thread read before its worker at every burst). A thread that
// runs most of the time is skipped for a millisecond or two when a read finds it waiting, so
// picks stay close to uniform over the time threads run.
inline constexpr uint64_t kNotRunningFirstWaitNs = 1'000'000;
inline constexpr unsigned kNotRunningMaxDoublings = 4;
inline constexpr uint64_t kNotedDifferences = 10;  // emulation checks that differed, told as notes
// New threads are looked for at most this often (a directory read of /proc/PID/task): at
// hundreds of bursts a second a scan per burst was a fifth of the tracer's time.
inline constexpr uint64_t kScanIntervalNs = 100'000'000;
// Counters go to the collector at most this often, and windows are sent in batches at least
// this often (one pipe write per burst woke the collector per window).
inline constexpr uint64_t kStatsIntervalNs = 100'000'000;
inline constexpr uint64_t kFlushIntervalNs = 20'000'000;
inline constexpr size_t kOutboxBytes = 64 * 1024;

inline bool IsGroupStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// Stopped time of the last second: the cap is held over every one-second interval, not on
// average. Entries are (when the stop ended, how long it was).
class StopWindow {
 public:
  void Add(uint64_t end_ns, uint64_t stopped_ns) {
    entries_.push_back({end_ns, stopped_ns});
    sum_ += stopped_ns;
    Prune(end_ns);
    max_ = std::max(max_, sum_);
  }
  uint64_t InLastSecond(uint64_t now_ns) {
    Prune(now_ns);
    return sum_;
  }
  // When the oldest entry leaves the window (0: empty).
  uint64_t NextExpiry() const { return entries_.empty() ? 0 : entries_.front().first + kSecondNs; }
  uint64_t max() const { return max_; }

 private:
  void Prune(uint64_t now_ns) {
    while (!entries_.empty() && entries_.front().first + kSecondNs <= now_ns) {
      sum_ -= entries_.front().second;
      entries_.pop_front();
    }
  }
  std::deque<std::pair<uint64_t, uint64_t>> entries_;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

struct Thread {
  bool group_stopped = false;
  long options = 0;  // the ptrace options set on it (DesiredOptions() when up to date)
  DebugRegisterCache debug_registers;
  decoders::UniqueFd stat_fd;         // /proc/PID/task/TID/stat (ReadTaskState)
  uint64_t not_running_until_ns = 0;  // found not running: not read again before this
  unsigned not_running_reads = 0;     // reads in a row that found it not running
  // A single step of ours timed out unanswered: its trap may still come, as the thread's next
  // signal stop (a queued trap is delivered first, as soon as the thread resumes). Cleared at
  // that stop, whatever it is.
  bool late_step_trap = false;
};

// A process a traced thread forked while int3s were in use (see software_breakpoints.h).
struct Guest {
  enum class Kind : uint8_t { kUnknown, kFork, kVfork } kind = Kind::kUnknown;
  bool stopped_waiting = false;  // its first stop came before its parent's fork event
  int pending_signal = 0;        // what it stopped for then, to deliver when settled
};
class BurstTracer {
 public:
  BurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd, pid_t parent,
              const StepProbeResult* probe, AfterAttach after_attach)
      : options_(options),
        control_fd_(control_fd),
        data_fd_(data_fd),
        parent_(parent),
        given_probe_(probe),
        after_attach_(std::move(after_attach)),
        reader_(options.pid),
        int3_(options.pid),
        rng_(options.seed ? options.seed : MonotonicNs()) {
    reader_.SetBreakpoints(&int3_);
  }

  int Run();

 private:
  static std::string Errno() { return std::strerror(errno); }

  int Fail(ErrorCode code, int sys_errno, const std::string& message);

  void SetMode(StepMode mode);

  // int3s are in text every thread runs, so under kInt3 no thread may run untraced: new threads
  // are attached at birth (PTRACE_O_TRACECLONE, two stops per thread created, charged to the
  // cap), and fork children, which get a copy of the text with our bytes in it, are cleaned.
  // Other modes leave the text alone and need neither: thread creation then costs no stop.
  long DesiredOptions() const;

  // A stopped thread whose options are not the current mode's gets them now.
  void UpdateOptions(pid_t tid, Thread& t);

  bool SetUpSignals();

  // Seizes every thread, repeating the scan until it finds no new one. PTRACE_SEIZE does not
  // stop a thread, and new threads are not auto-attached (no PTRACE_O_TRACECLONE): a program
  // that creates threads by the thousand pays nothing for it; ScanThreads picks them up.
  bool AttachAll(std::string* error, int* err);

  // New threads since the last scan: seized without stopping them. Returns how many.
  size_t ScanThreads();

  static std::string PermissionHint();

  void Loop();

  // Mean gap 1/rate; uniform jitter in [0.5, 1.5] of that against aliasing.
  uint64_t NextGap();

  void DrainSignals();

  // Every event waiting in the kernel. Stops we resume are charged to the cap; clocks are read
  // once per drain, not per event.
  void DrainEvents();

  void ChargeEventStops(uint64_t count, uint64_t ns, uint64_t now);

  // Under int3 every thread's creation stops two threads. A program that creates threads fast
  // enough for those stops alone to take half the cap is better served by a mode that leaves
  // thread creation alone; each thread drops the clone tracing at its next stop.
  void CheckEventLoad(uint64_t now, uint64_t cap);

  void OnExit(pid_t tid, int st);

  void Resume(pid_t tid, int sig);

  void Note(const std::string& text);

  // A SIGTRAP stop caused by us (a late step trap, a breakpoint that fired after its leg was
  // given up, another thread at one of our int3s): swallow it, rewinding an int3. A single-step
  // trap (TRAP_TRACE) is ours only when `late_step_possible` (Thread::late_step_trap); any other
  // is the program's own trap flag at work, and reaches its handler.
  bool SwallowOurTrap(pid_t tid, bool late_step_possible);

  // Hands a signal-delivery stop's signal back to the program.
  void ForwardSignal(pid_t tid, int sig);

  // `tid` is in an interrupt stop of ours: a system call the interrupt made return EINTR is
  // restarted (interrupted_syscall.h), and counted.
  void SettleInterruptStop(pid_t tid);
  void CountRestart(SyscallRestart restart);

  // A stop of a thread that is not in a burst. Returns true when it was a stop we caused or
  // traced (charged to the cap), false for exits and the program's own job-control stops.
  bool HandleEvent(pid_t tid, int st);

  // A stop from a tracee that is not a thread of the target: a child it forked (traced only
  // while int3s are in use). It may stop before its parent's fork event says what it is.
  bool IsOtherProcess(pid_t tid) const;

  bool HandleGuest(pid_t tid, int st);

  // A guest whose kind is known and that is stopped: a fork child gets our bytes restored and
  // goes; a vfork child shares the text with its parent and stays traced until it execs.
  void SettleGuest(pid_t tid, int sig);

  void OnExec();

  // Picks the next thread round robin among those running now (state R), and says the CPU it
  // runs on; -1 when none is (burst_thread_pick.cc).
  pid_t PickThread(int* cpu);

  // Moves this tracer onto `cpu` for a burst: a stop then wakes a tracer on the same CPU,
  // without a cross-CPU wake-up (on a VM an inter-processor interrupt is a VM exit, and it
  // made each stop ~30% dearer here). Undone by Unpin.
  void PinTo(int cpu);
  void Unpin();

  // One burst, within `room` ns of stopped time.
  void Burst(uint64_t room);

  // Waits (bounded) for tid's interrupt stop, handling whatever else it reports first. False
  // when there is no burst to run (it exited, entered a job-control stop, or did not stop).
  bool AwaitInterrupt(pid_t tid);

  // The thread is in its interrupt stop, where these were read: false (it is resumed, and the
  // burst counted) when it has no window to take: it is inside a system call (one that would
  // return EINTR is restarted), or SIGTRAPs of its own are in play: it single-steps itself
  // (its trap flag set: stepping it would take its traps, and emulating it would leave out its
  // handler), or, for a window that traps, it blocks or ignores SIGTRAP (it is in its handler):
  // a trap of ours would reset its handler (signal_masks.h).
  bool ReadyForWindow(pid_t tid, SyscallAtStop syscall, uint64_t rflags);

  // The thread is in its interrupt stop: step it through one window and let it go. Returns
  // false when the thread is gone.
  bool StepWindow(pid_t tid, uint64_t t0, uint64_t room, std::optional<SteppedWindow>* out);

  // kEmulate: the thread is in its interrupt stop; its next window runs in the emulator and the
  // thread resumes where it stopped, unchanged. Returns false when the thread is gone.
  bool EmulateWindow(pid_t tid, std::optional<SteppedWindow>* out);

  void CountEmulated(const EmulatedWindows::Window& w);

  void CountCheck(const EmulationCheck& check);

  // The instructions that ended the most emulated windows, most first, into the stats.
  void FillEndingInstructions();

  // A leg or step timed out. A breakpoint mechanism that has never fired here, or that keeps
  // timing out, is given up for the next one that the probe says works.
  void OnTimeout();

  // Before int3s go into the text, every thread must be traced with the int3 options: a thread
  // that runs untraced into one of our bytes dies of SIGTRAP. Scans until no new thread turns
  // up (new ones are seized with the options), then switches over the threads seized in
  // another mode, each at the cost of one stop. False when that failed: int3s are not safe.
  bool EnsureInt3Safe(pid_t stopped);

  void EmitWindow(pid_t tid, uint64_t t0, SteppedWindow w, ThreadStack stack);

  // Sends the windows batched in the outbox. A pipe the collector has let fill up costs them
  // (counted: they were counted as windows when batched, and move to windows_dropped_pipe).
  void Flush();

  void SendStats(bool final);

  // Interrupts every thread and detaches each at its stop, handing back any signal it stopped
  // for and taking back every trace of ours (debug registers, int3s); a thread in a job-control
  // stop stays stopped, as it would without us. Bounded: a thread that does not stop in time
  // is detached by the kernel when this process exits (it is running, so nothing of ours is
  // pending on it).
  void DetachAll();

  const PtraceBurstOptions options_;
  const int control_fd_;
  const int data_fd_;
  const pid_t parent_;
  const StepProbeResult* const given_probe_;  // the collector's probe, or null: our own
  const AfterAttach after_attach_;
  int signal_fd_ = -1;
  bool quit_ = false;
  uint64_t start_ns_ = 0;
  size_t rr_ = 0;
  StepProbeResult probe_;
  StepMode mode_ = StepMode::kSingleStep;
  uint64_t stop_cost_ns_ = 0;
  uint64_t window_cost_ns_ = 0;  // stopped time of a whole window, smoothed
  bool last_window_complete_ = false;
  uint64_t legs_worked_ = 0;  // breakpoint legs that stopped as planned, in this mode
  int timeouts_ = 0;          // legs or steps that timed out, in this mode
  bool pinned_ = false;
  cpu_set_t saved_affinity_{};
  InstructionReader reader_;
  SoftwareBreakpoints int3_;
  std::optional<EmulatedWindows> emulated_;   // kEmulate: the process's emulator and pages
  WaitTicker ticker_{2000, /*armed=*/false};  // armed during bursts only (TickerArmed)
  uint64_t resumed_ns_ = 0;                   // when the burst's thread was resumed, if noted
  // A stop's notification: half a single step's round trip as the probe measured it.
  uint64_t wake_ns_ = 10'000;
  uint64_t last_scan_ns_ = 0;
  uint64_t stats_sent_ns_ = 0;
  std::vector<uint8_t> outbox_;  // framed window messages not yet written (Flush)
  uint64_t outbox_windows_ = 0;
  // What the outbox's windows added to the counters, taken back when the pipe refuses them:
  // the counters describe the windows the collector got.
  uint64_t outbox_short_ = 0, outbox_events_ = 0, outbox_taken_ = 0, outbox_instructions_ = 0;
  uint64_t outbox_since_ns_ = 0;
  // Emulated windows ended by an instruction, by (mnemonic, reason); bounded by the mnemonics.
  std::map<std::pair<uint16_t, uint8_t>, uint64_t> ending_counts_;
  std::mt19937_64 rng_;
  std::unordered_map<pid_t, Thread> threads_;
  std::unordered_map<pid_t, Guest> guests_;
  StopWindow window_;        // every stop we caused
  StopWindow event_window_;  // of which, event stops
  PtraceBurstStats stats_;
};

}  // namespace pathprof::stepping::burst
