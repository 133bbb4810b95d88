#include "burst_tracer.h"

#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "burst_tracer_impl.h"
#include "burst_wire.h"
#include "pathprof/core/procfs.h"

namespace pathprof::stepping {
namespace burst {

int BurstTracer::Run() {
  start_ns_ = MonotonicNs();
  if (!SetUpSignals())
    return Fail(ErrorCode::kInternal, errno, "burst tracer: signalfd failed: " + Errno());
  const StepProbeResult probe = given_probe_ != nullptr ? *given_probe_ : CachedStepProbe();
  if (!probe.ran)
    return Fail(ErrorCode::kPermission, 0,
                "burst tracer: the step probe could not run: " + probe.error);
  // The one decision caps, run, start and the daemon report (step_probe.h).
  const StepModeChoice choice = ChooseStepMode(options_.step_mode, probe);
  if (!choice.ok) return Fail(ErrorCode::kUnavailable, 0, "burst tracer: " + choice.reason);
  probe_ = probe;
  if (probe.single_step_ns > 0) wake_ns_ = probe.single_step_ns / 2;
  SetMode(choice.mode);
  int err = 0;
  std::string error;
  if (!AttachAll(&error, &err)) {
    DetachAll();
    return Fail(err == EPERM ? ErrorCode::kPermission : ErrorCode::kUnavailable, err, error);
  }
  if (after_attach_)
    if (const std::string note = after_attach_(mode_); !note.empty()) Note(note);
  const uint8_t mode = static_cast<uint8_t>(mode_);
  if (wire::Send(data_fd_, wire::Type::kReady, &mode, 1) != wire::SendResult::kSent) {
    DetachAll();
    return 1;
  }
  Loop();
  DetachAll();
  stats_.detached = true;
  SendStats(true);
  return 0;
}

int BurstTracer::Fail(ErrorCode code, int sys_errno, const std::string& message) {
  wire::SendError(data_fd_, code, sys_errno, message);
  return 1;
}

bool BurstTracer::SetUpSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return false;
  signal(SIGPIPE, SIG_IGN);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  return signal_fd_ >= 0;
}

bool BurstTracer::AttachAll(std::string* error, int* err) {
  for (int pass = 0; pass < 100; ++pass) {
    const size_t before = threads_.size();
    for (pid_t tid : procfs::Procfs::Host().Tasks(options_.pid)) {
      if (threads_.count(tid)) continue;
      if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(DesiredOptions())) != 0) {
        if (errno == ESRCH) continue;  // exited meanwhile
        if (threads_.empty()) {
          *err = errno;
          *error = errno == EPERM
                       ? "burst tracer: PTRACE_SEIZE of process " + std::to_string(options_.pid) +
                             " refused (EPERM). " + PermissionHint()
                       : "burst tracer: PTRACE_SEIZE of thread " + std::to_string(tid) +
                             " failed: " + Errno();
          return false;
        }
        continue;
      }
      threads_[tid].options = DesiredOptions();
      ++stats_.threads_attached;
    }
    if (threads_.size() == before) break;
  }
  if (threads_.empty()) {
    *err = ESRCH;
    *error = "burst tracer: process " + std::to_string(options_.pid) + " has no threads left";
    return false;
  }
  return true;
}

size_t BurstTracer::ScanThreads() {
  size_t seized = 0;
  for (pid_t tid : procfs::Procfs::Host().Tasks(options_.pid)) {
    if (threads_.count(tid)) continue;
    if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(DesiredOptions())) != 0)
      continue;
    threads_[tid].options = DesiredOptions();
    ++stats_.threads_attached;
    if (++seized == kMaxSeizePerScan) break;
  }
  return seized;
}

std::string BurstTracer::PermissionHint() {
  std::string hint;
  auto scope = procfs::Procfs::Host().ReadGlobal("sys/kernel/yama/ptrace_scope");
  if (scope.ok() && !scope->empty())
    hint += "Yama kernel.yama.ptrace_scope is " + *scope +
            (*scope == "3" ? " (ptrace disabled until reboot). "
                           : "; set it to 0 with 'sysctl -w kernel.yama.ptrace_scope=0', or ");
  hint +=
      "run pathprof as root or with CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep, or "
      "AmbientCapabilities=CAP_SYS_PTRACE in the unit); in a container add --cap-add "
      "SYS_PTRACE and a seccomp profile that allows ptrace";
  return hint;
}

void BurstTracer::Loop() {
  uint64_t next_burst = MonotonicNs() + NextGap();
  while (!quit_ && !threads_.empty()) {
    uint64_t now = MonotonicNs();
    // Sleeps to the next burst with nanosecond precision: at a thousand bursts a second a
    // millisecond-rounded poll would set the rate, not the gaps drawn.
    uint64_t sleep_ns = next_burst > now ? std::min(next_burst - now, 100'000'000ul) : 0;
    if (!outbox_.empty()) sleep_ns = std::min(sleep_ns, kFlushIntervalNs);
    const timespec timeout{static_cast<time_t>(sleep_ns / kSecondNs),
                           static_cast<long>(sleep_ns % kSecondNs)};
    pollfd fds[2] = {{control_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
    const int n = ppoll(fds, 2, &timeout, nullptr);
    if (n < 0 && errno != EINTR) break;
    if (n > 0 && fds[0].revents) {
      char c;
      const ssize_t r = read(control_fd_, &c, 1);
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN) || (r == 1 && c == 'q'))
        quit_ = true;  // EOF: the collector is gone or stopping
    }
    if (n > 0 && fds[1].revents) DrainSignals();
    DrainEvents();
    if (quit_ || threads_.empty()) break;
    now = MonotonicNs();
    if (!outbox_.empty() && now - outbox_since_ns_ >= kFlushIntervalNs) Flush();
    if (now - stats_sent_ns_ >= kStatsIntervalNs) SendStats(false);
    if (now < next_burst) continue;
    if (now - last_scan_ns_ >= kScanIntervalNs) {
      ScanThreads();
      last_scan_ns_ = now;
    }
    const uint64_t used = window_.InLastSecond(now);
    // Bursts are admitted against 15/16 of the cap: a leg that runs the thread to its next
    // breakpoint is charged whole, and a long one can pass the budget checked between legs.
    const uint64_t full_cap = static_cast<uint64_t>(options_.max_stopped_fraction * kSecondNs);
    const uint64_t cap = full_cap / 16 * 15;
    CheckEventLoad(now, full_cap);
    // Room for a whole window as long as the last ones took: a window cut short by the cap
    // costs its stops and yields nothing.
    const uint64_t min_room =
        std::max<uint64_t>(8 * stop_cost_ns_ + 200'000, window_cost_ns_ + window_cost_ns_ / 4);
    if (used + min_room > cap) {
      ++stats_.deferred_cap;
      const uint64_t expiry = window_.NextExpiry();
      next_burst = std::max(now + 1'000'000, expiry);
      continue;
    }
    Burst(cap - used);
    next_burst = MonotonicNs() + NextGap();
  }
  if (threads_.empty()) stats_.target_exited = true;
}

uint64_t BurstTracer::NextGap() {
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return static_cast<uint64_t>(1e9 / options_.RateFor(mode_) * jitter(rng_));
}

void BurstTracer::DrainSignals() {
  signalfd_siginfo si;
  while (read(signal_fd_, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGCHLD) continue;
    // PR_SET_PDEATHSIG fires when the *thread* that started us ends, though the process
    // lives on: a SIGTERM sent by our parent while it is still our parent is that, not a
    // request. Anything else (the parent gone, or another sender) is.
    if (si.ssi_signo == SIGTERM && static_cast<pid_t>(si.ssi_pid) == parent_ &&
        getppid() == parent_)
      continue;
    quit_ = true;
  }
}

void BurstTracer::PinTo(int cpu) {
  if (cpu < 0 || sched_getaffinity(0, sizeof saved_affinity_, &saved_affinity_) != 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pinned_ = sched_setaffinity(0, sizeof set, &set) == 0;
}

void BurstTracer::Unpin() {
  if (pinned_) sched_setaffinity(0, sizeof saved_affinity_, &saved_affinity_);
  pinned_ = false;
}

void BurstTracer::Burst(uint64_t room) {
  // Armed first: the thread's state is read as close to its interrupt as can be, as one that
  // falls asleep in between is stopped inside a system call.
  TickerArmed armed(ticker_);
  int cpu = -1;
  const pid_t tid = PickThread(&cpu);
  if (tid < 0) {
    ++stats_.skipped_no_thread;
    return;
  }
  const uint64_t t0 = MonotonicNs();
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    ++stats_.skipped_no_thread;
    return;
  }
  ++stats_.bursts;
  // An emulated window is one stop: moving this tracer onto the target's CPU and back would
  // cost more than the cross-CPU wake-up it saves.
  if (mode_ != StepMode::kEmulate) PinTo(cpu);
  resumed_ns_ = 0;
  std::optional<SteppedWindow> window;
  const bool interrupted = AwaitInterrupt(tid);
  // The thread ran on until the interrupt reached it, which on a busy host takes as long as
  // it waits for a CPU (milliseconds, measured at a load of 6 on 2 CPUs): that is not time it
  // was stopped. Its stop began about one wake-up of this tracer before the stop was seen.
  const uint64_t seen = MonotonicNs();
  const uint64_t began = seen - std::min(seen - t0, wake_ns_);
  // The window's calling context: the stack as the thread stopped, before it runs on.
  ThreadStack stack;
  if (interrupted) stack = ReadThreadStack(options_.pid, tid);
  const bool stepped = interrupted && StepWindow(tid, began, room, &window);
  // Off the target's CPU before anything else: the pipe write below wakes the collector, and
  // a collector woken beside the target would take its CPU.
  Unpin();
  // The thread was stopped until it was resumed (emulated windows note when), or until now.
  const uint64_t t1 = resumed_ns_ != 0 ? resumed_ns_ : MonotonicNs();
  if (window) EmitWindow(tid, began, std::move(*window), std::move(stack));
  if (stepped || threads_.count(tid)) {
    const uint64_t stopped = t1 - began;
    stats_.stopped_ns += stopped;
    stats_.longest_stop_ns = std::max(stats_.longest_stop_ns, stopped);
    window_.Add(t1, stopped);
  }
  if (last_window_complete_) {
    // What a whole window costs here, smoothed: the room the next burst needs.
    const uint64_t cost = t1 - began;
    window_cost_ns_ = window_cost_ns_ == 0 ? cost : (7 * window_cost_ns_ + cost) / 8;
    last_window_complete_ = false;
  }
  stats_.max_stopped_ppm_1s = window_.max() * 1000000 / kSecondNs;
}

bool BurstTracer::AwaitInterrupt(pid_t tid) {
  for (;;) {
    int st = 0;
    switch (WaitStop(tid, &st, kStopTimeoutNs)) {
      case StopWait::kStopped:
        break;
      case StopWait::kExited:
        OnExit(tid, st);
        ++stats_.aborted_exit;
        return false;
      case StopWait::kGone:
        threads_.erase(tid);
        ++stats_.aborted_exit;
        return false;
      case StopWait::kTimedOut:
        // Uninterruptible sleep or a wedged host: its interrupt stop comes later and the
        // event loop resumes it.
        ++stats_.interrupt_timeouts;
        return false;
    }
    if ((st >> 16) == PTRACE_EVENT_STOP && !IsGroupStopSignal(WSTOPSIG(st))) return true;
    HandleEvent(tid, st);
    if ((st >> 16) == PTRACE_EVENT_STOP) {  // entered a job-control stop: no burst now
      ++stats_.aborted_signal;
      return false;
    }
    // Anything else (a signal, an exec) was handled and the thread resumed; the interrupt
    // is still pending and stops it next.
  }
}

}  // namespace burst

int RunBurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd, pid_t parent,
                   const StepProbeResult* probe, const AfterAttach& after_attach) {
  burst::BurstTracer tracer(options, control_fd, data_fd, parent, probe, after_attach);
  return tracer.Run();
}

}  // namespace pathprof::stepping
