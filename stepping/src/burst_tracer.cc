#include "burst_tracer.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "burst_wire.h"
#include "emulated_windows.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/stepping/step_probe.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"
#include "step_classifier.h"
#include "thread_stack_reader.h"
#include "window_stepper.h"

namespace pathprof::stepping {
namespace {

constexpr uint64_t kStopTimeoutNs = 50'000'000;    // one leg, step or interrupt
constexpr uint64_t kDetachBudgetNs = 400'000'000;  // detaching every thread at the end
constexpr uint64_t kSecondNs = 1'000'000'000;
constexpr int kTimeoutsBeforeFallback = 3;  // legs timed out in a mode that has worked
constexpr size_t kMaxSeizePerScan = 256;
constexpr size_t kMaxThreadsChecked = 64;  // per pick: /proc reads stay bounded
// A thread found not running is read again only after a wait that doubles with each such read
// in a row, from 1 ms to 16 ms: each read of a stat file cost more than a tenth of the tracer's
// CPU on zstd (a sleeping main thread read before its worker at every burst). A thread that
// runs most of the time is skipped for a millisecond or two when a read finds it waiting, so
// picks stay close to uniform over the time threads run.
constexpr uint64_t kNotRunningFirstWaitNs = 1'000'000;
constexpr unsigned kNotRunningMaxDoublings = 4;
constexpr uint64_t kNotedDifferences = 10;  // emulation checks that differed, told as notes
// New threads are looked for at most this often (a directory read of /proc/PID/task): at
// hundreds of bursts a second a scan per burst was a fifth of the tracer's time.
constexpr uint64_t kScanIntervalNs = 100'000'000;
// Counters go to the collector at most this often, and windows are sent in batches at least
// this often (one pipe write per burst woke the collector per window).
constexpr uint64_t kStatsIntervalNs = 100'000'000;
constexpr uint64_t kFlushIntervalNs = 20'000'000;
constexpr size_t kOutboxBytes = 64 * 1024;

bool IsGroupStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// The scheduler state letter of one thread ('R' running, 'S' sleeping, ...) and the CPU it last
// ran on; state 0 when it is gone.
struct TaskState {
  char state = 0;
  int cpu = -1;
};
// `*fd` is the thread's stat file, opened on first use and kept: at hundreds of bursts a second
// an open and close per pick cost more than the read (a read from offset 0 is always fresh).
TaskState ReadTaskState(pid_t pid, pid_t tid, decoders::UniqueFd* fd) {
  TaskState out;
  if (fd->get() < 0) {
    const std::string path = procfs::Procfs::Host().TaskPath(pid, tid, "stat");
    *fd = decoders::UniqueFd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd->get() < 0) return out;
  }
  char buf[1024];
  const ssize_t n = pread(fd->get(), buf, sizeof buf, 0);
  if (n <= 0) return out;
  auto stat = procfs::ParseStat(std::string_view(buf, static_cast<size_t>(n)));
  if (!stat.ok()) return out;
  out.state = stat->state;
  out.cpu = stat->processor;
  return out;
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
};

// A process a traced thread forked while int3s were in use (see software_breakpoints.h).
struct Guest {
  enum class Kind : uint8_t { kUnknown, kFork, kVfork } kind = Kind::kUnknown;
  bool stopped_waiting = false;  // its first stop came before its parent's fork event
  int pending_signal = 0;        // what it stopped for then, to deliver when settled
};

class BurstTracer {
 public:
  BurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd, pid_t parent)
      : options_(options),
        control_fd_(control_fd),
        data_fd_(data_fd),
        parent_(parent),
        reader_(options.pid),
        int3_(options.pid),
        rng_(options.seed ? options.seed : MonotonicNs()) {
    reader_.SetBreakpoints(&int3_);
  }

  int Run() {
    start_ns_ = MonotonicNs();
    if (!SetUpSignals())
      return Fail(ErrorCode::kInternal, errno, "burst tracer: signalfd failed: " + Errno());
    const StepProbeResult probe = CachedStepProbe();
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

 private:
  static std::string Errno() { return std::strerror(errno); }

  int Fail(ErrorCode code, int sys_errno, const std::string& message) {
    wire::SendError(data_fd_, code, sys_errno, message);
    return 1;
  }

  void SetMode(StepMode mode) {
    mode_ = mode;
    stats_.step_mode = static_cast<uint8_t>(mode);
    switch (mode) {
      case StepMode::kBreakpoints:
        stop_cost_ns_ = probe_.dr_leg_ns;
        break;
      case StepMode::kInt3:
        stop_cost_ns_ = probe_.int3_leg_ns;
        break;
      case StepMode::kSingleStep:
      case StepMode::kEmulate:  // one stop, as a step's, and the emulation (timed per window)
        stop_cost_ns_ = probe_.single_step_ns;
        break;
    }
    if (stop_cost_ns_ == 0) stop_cost_ns_ = probe_.single_step_ns;
    legs_worked_ = 0;
    timeouts_ = 0;
    window_cost_ns_ = 0;
  }

  // int3s are in text every thread runs, so under kInt3 no thread may run untraced: new threads
  // are attached at birth (PTRACE_O_TRACECLONE, two stops per thread created, charged to the
  // cap), and fork children, which get a copy of the text with our bytes in it, are cleaned.
  // Other modes leave the text alone and need neither: thread creation then costs no stop.
  long DesiredOptions() const {
    long opts = PTRACE_O_TRACEEXEC;
    if (mode_ == StepMode::kInt3)
      opts |= PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
    return opts;
  }

  // A stopped thread whose options are not the current mode's gets them now.
  void UpdateOptions(pid_t tid, Thread& t) {
    if (t.options == DesiredOptions()) return;
    if (ptrace(PTRACE_SETOPTIONS, tid, nullptr, reinterpret_cast<void*>(DesiredOptions())) == 0)
      t.options = DesiredOptions();
  }

  bool SetUpSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return false;
    signal(SIGPIPE, SIG_IGN);
    signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return signal_fd_ >= 0;
  }

  // Seizes every thread, repeating the scan until it finds no new one. PTRACE_SEIZE does not
  // stop a thread, and new threads are not auto-attached (no PTRACE_O_TRACECLONE): a program
  // that creates threads by the thousand pays nothing for it; ScanThreads picks them up.
  bool AttachAll(std::string* error, int* err) {
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

  // New threads since the last scan: seized without stopping them. Returns how many.
  size_t ScanThreads() {
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

  static std::string PermissionHint() {
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

  void Loop() {
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

  // Mean gap 1/rate; uniform jitter in [0.5, 1.5] of that against aliasing.
  uint64_t NextGap() {
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return static_cast<uint64_t>(1e9 / options_.RateFor(mode_) * jitter(rng_));
  }

  void DrainSignals() {
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

  // Every event waiting in the kernel. Stops we resume are charged to the cap; clocks are read
  // once per drain, not per event.
  void DrainEvents() {
    int st;
    pid_t tid;
    uint64_t t0 = 0;
    uint64_t charged = 0;
    while ((tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
      if (t0 == 0) t0 = MonotonicNs();
      if (HandleEvent(tid, st)) ++charged;
    }
    if (charged == 0) return;
    const uint64_t t1 = MonotonicNs();
    // Each stopped thread waited for the drain and paid a stop's own cost.
    ChargeEventStops(charged, charged * stop_cost_ns_ + charged * (t1 - t0), t1);
  }

  void ChargeEventStops(uint64_t count, uint64_t ns, uint64_t now) {
    stats_.event_stops += count;
    stats_.event_stopped_ns += ns;
    stats_.stopped_ns += ns;
    window_.Add(now, ns);
    event_window_.Add(now, ns);
  }

  // Under int3 every thread's creation stops two threads. A program that creates threads fast
  // enough for those stops alone to take half the cap is better served by a mode that leaves
  // thread creation alone; each thread drops the clone tracing at its next stop.
  void CheckEventLoad(uint64_t now, uint64_t cap) {
    if (mode_ != StepMode::kInt3 || event_window_.InLastSecond(now) <= cap / 2) return;
    ++stats_.step_mode_fallbacks;
    SetMode(probe_.dr_breakpoints.works ? StepMode::kBreakpoints : StepMode::kSingleStep);
    Note(
        "ptrace bursts: the target creates threads or processes too fast for int3 stepping "
        "(their stops alone took " +
        std::to_string(event_window_.InLastSecond(now) / 1000000) +
        " ms of the last second); stepping with " + std::string(StepModeName(mode_)) +
        " from now on");
  }

  void OnExit(pid_t tid, int st) {
    if (threads_.erase(tid)) ++stats_.threads_exited;
    guests_.erase(tid);
    if (tid == options_.pid) {
      // The leader is reported last, once every thread is gone: the process has exited.
      stats_.target_exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      stats_.threads_exited += threads_.size();
      threads_.clear();
    }
    if (threads_.empty()) stats_.target_exited = true;
  }

  void Resume(pid_t tid, int sig) {
    // ESRCH: killed under us; its exit status arrives through waitpid.
    ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
  }

  void Note(const std::string& text) {
    Flush();  // after the windows that came before it
    wire::Send(data_fd_, wire::Type::kNote, text.data(), static_cast<uint32_t>(text.size()));
  }

  // A SIGTRAP stop caused by us (a late step trap, a breakpoint that fired after its leg was
  // given up, another thread at one of our int3s): swallow it, rewinding an int3.
  bool SwallowOurTrap(pid_t tid) {
    siginfo_t si{};
    uint64_t rip = 0;
    if (!StopSigInfo(tid, &si)) return false;
    if (si.si_code == kTrapTrace || si.si_code == kTrapHwBkpt) return true;
    if (si.si_code == kTrapInt3 && ReadRip(tid, &rip) && int3_.OwnsTrap(rip)) {
      WriteRip(tid, rip - 1);
      ++stats_.int3_parked;
      return true;
    }
    return false;
  }

  // A stop of a thread that is not in a burst. Returns true when it was a stop we caused or
  // traced (charged to the cap), false for exits and the program's own job-control stops.
  bool HandleEvent(pid_t tid, int st) {
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      OnExit(tid, st);
      return false;
    }
    if (!WIFSTOPPED(st)) return false;
    if (guests_.count(tid) || (!threads_.count(tid) && IsOtherProcess(tid)))
      return HandleGuest(tid, st);
    const int sig = WSTOPSIG(st);
    const int event = st >> 16;
    if (threads_.emplace(tid, Thread{}).second) {
      ++stats_.threads_attached;   // attached at birth (PTRACE_O_TRACECLONE): its first stop
      threads_[tid].options = -1;  // inherited from its creator; set ours below
    }
    Thread& t = threads_[tid];
    // A leg given up with its debug registers armed: disarm at the first chance.
    if (t.debug_registers.armed) DisarmDebugRegisters(tid, &t.debug_registers);
    UpdateOptions(tid, t);  // after a change of mode, each thread at its next stop
    switch (event) {
      case PTRACE_EVENT_CLONE: {
        unsigned long child = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
        // Its exit may have been reaped before this event: never remember a thread that is gone
        // (the loop ends when no thread is left).
        if (child != 0 && syscall(SYS_tgkill, options_.pid, child, 0) == 0 &&
            threads_.emplace(static_cast<pid_t>(child), Thread{}).second) {
          ++stats_.threads_attached;
          threads_[static_cast<pid_t>(child)].options = -1;
        }
        Resume(tid, 0);
        return true;
      }
      case PTRACE_EVENT_EXEC:
        OnExec();
        Resume(tid, 0);
        return true;
      case PTRACE_EVENT_FORK:
      case PTRACE_EVENT_VFORK: {
        unsigned long child = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
        if (child != 0) {
          Guest& g = guests_[static_cast<pid_t>(child)];
          g.kind = event == PTRACE_EVENT_VFORK ? Guest::Kind::kVfork : Guest::Kind::kFork;
          if (g.stopped_waiting) SettleGuest(static_cast<pid_t>(child), g.pending_signal);
        }
        Resume(tid, 0);
        return true;
      }
      case PTRACE_EVENT_STOP:
        if (IsGroupStopSignal(sig)) {
          // Job control: stay stopped until SIGCONT, as without us.
          ++stats_.group_stops;
          t.group_stopped = true;
          ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
          return false;
        }
        t.group_stopped = false;  // an interrupt we no longer wait for
        Resume(tid, 0);
        return true;
      case 0:
        if (sig == SIGTRAP && SwallowOurTrap(tid)) {
          Resume(tid, 0);
          return true;
        }
        // Signal-delivery stop: the program's signal; hand it back.
        ++stats_.signals_forwarded;
        Resume(tid, sig);
        return true;
      default:
        Resume(tid, 0);
        return true;
    }
  }

  // A stop from a tracee that is not a thread of the target: a child it forked (traced only
  // while int3s are in use). It may stop before its parent's fork event says what it is.
  bool IsOtherProcess(pid_t tid) const {
    auto status = procfs::Procfs::Host().ReadStatus(tid);
    return !status.ok() || status->tgid != options_.pid;
  }

  bool HandleGuest(pid_t tid, int st) {
    Guest& g = guests_[tid];
    const int event = st >> 16;
    const int sig = event == 0 ? WSTOPSIG(st) : 0;
    if (event == PTRACE_EVENT_EXEC) {  // a vfork child exec'd: its memory is its own now
      ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
      guests_.erase(tid);
      return true;
    }
    if (sig == SIGTRAP && SwallowOurTrap(tid)) {
      Resume(tid, 0);
      return true;
    }
    if (g.kind == Guest::Kind::kUnknown) {
      g.stopped_waiting = true;  // its parent's fork event will say what it is
      g.pending_signal = sig;
      return true;
    }
    SettleGuest(tid, sig);
    return true;
  }

  // A guest whose kind is known and that is stopped: a fork child gets our bytes restored and
  // goes; a vfork child shares the text with its parent and stays traced until it execs.
  void SettleGuest(pid_t tid, int sig) {
    Guest& g = guests_[tid];
    if (g.kind == Guest::Kind::kFork) {
      if (int3_.CleanChild(tid) > 0) ++stats_.forks_cleaned;
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      guests_.erase(tid);
    } else {
      g.stopped_waiting = false;
      Resume(tid, sig);
    }
  }

  void OnExec() {
    ++stats_.execs;
    reader_.Reset();  // new images: cached instructions are stale
    if (emulated_) emulated_->Reset();
    int3_.ForgetAll();
    // exec leaves one thread, with the process id; the others are gone, and exec clears
    // debug registers.
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (it->first != options_.pid) {
        ++stats_.threads_exited;
        it = threads_.erase(it);
      } else {
        it->second.debug_registers = DebugRegisterCache{};
        it->second.stat_fd = decoders::UniqueFd();
        ++it;
      }
    }
    threads_.emplace(options_.pid, Thread{});
    Note("process " + std::to_string(options_.pid) + " exec'd: images changed");  // flushes
    wire::Send(data_fd_, wire::Type::kExec, nullptr, 0);
  }

  // Picks the next thread round robin, preferring one that is running: interrupting a sleeping
  // thread would find it in a system call with nothing to step.
  pid_t PickThread(int* cpu) {
    std::vector<pid_t> tids;
    for (const auto& [tid, t] : threads_)
      if (!t.group_stopped) tids.push_back(tid);
    if (tids.empty()) return -1;
    std::sort(tids.begin(), tids.end());
    const uint64_t now = MonotonicNs();
    pid_t fallback = -1;
    for (size_t i = 0; i < tids.size() && i < kMaxThreadsChecked; ++i) {
      const pid_t tid = tids[(rr_ + i) % tids.size()];
      Thread& thread = threads_[tid];
      if (now < thread.not_running_until_ns) {
        if (fallback < 0) fallback = tid;  // as it was when read last, without a CPU to pin to
        continue;
      }
      const TaskState s = ReadTaskState(options_.pid, tid, &thread.stat_fd);
      if (s.state == 'R') {
        thread.not_running_reads = 0;
        rr_ = (rr_ + i + 1) % tids.size();
        *cpu = s.cpu;
        return tid;
      }
      if (s.state != 0) {
        const unsigned doublings = std::min(thread.not_running_reads, kNotRunningMaxDoublings);
        thread.not_running_reads = doublings + 1;
        thread.not_running_until_ns = now + (kNotRunningFirstWaitNs << doublings);
      }
      if (fallback < 0 && s.state != 0) {
        fallback = tid;
        *cpu = s.cpu;
      }
    }
    rr_ = (rr_ + 1) % tids.size();
    return fallback;
  }

  // Moves this tracer onto `cpu` for a burst: a stop then wakes a tracer on the same CPU,
  // without a cross-CPU wake-up (on a VM an inter-processor interrupt is a VM exit, and it
  // made each stop ~30% dearer here). Undone by Unpin.
  void PinTo(int cpu) {
    if (cpu < 0 || sched_getaffinity(0, sizeof saved_affinity_, &saved_affinity_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pinned_ = sched_setaffinity(0, sizeof set, &set) == 0;
  }
  void Unpin() {
    if (pinned_) sched_setaffinity(0, sizeof saved_affinity_, &saved_affinity_);
    pinned_ = false;
  }

  // One burst, within `room` ns of stopped time.
  void Burst(uint64_t room) {
    int cpu = -1;
    const pid_t tid = PickThread(&cpu);
    if (tid < 0) {
      ++stats_.skipped_no_thread;
      return;
    }
    TickerArmed armed(ticker_);
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
      stats_.stopped_ns += t1 - began;
      window_.Add(t1, t1 - began);
    }
    if (last_window_complete_) {
      // What a whole window costs here, smoothed: the room the next burst needs.
      const uint64_t cost = t1 - began;
      window_cost_ns_ = window_cost_ns_ == 0 ? cost : (7 * window_cost_ns_ + cost) / 8;
      last_window_complete_ = false;
    }
    stats_.max_stopped_ppm_1s = window_.max() * 1000000 / kSecondNs;
  }

  // Waits (bounded) for tid's interrupt stop, handling whatever else it reports first. False
  // when there is no burst to run (it exited, entered a job-control stop, or did not stop).
  bool AwaitInterrupt(pid_t tid) {
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

  // The thread is in its interrupt stop: step it through one window and let it go. Returns
  // false when the thread is gone.
  bool StepWindow(pid_t tid, uint64_t t0, uint64_t room, std::optional<SteppedWindow>* out) {
    if (mode_ == StepMode::kEmulate) return EmulateWindow(tid, out);
    StoppedThreadState state;
    if (!ReadStoppedThread(tid, &state)) {
      ++stats_.aborted_exit;
      Resume(tid, 0);
      return true;
    }
    if (state.in_restartable_syscall) {
      ++stats_.aborted_syscall;
      Resume(tid, 0);
      return true;
    }
    if (mode_ == StepMode::kInt3 && !EnsureInt3Safe(tid)) {
      // A thread could not be brought under the int3 options: never risk an untraced one
      // meeting our bytes.
      ++stats_.step_mode_fallbacks;
      SetMode(StepMode::kSingleStep);
      Note("ptrace bursts: could not trace every thread's creation; stepping with single steps");
    }
    WindowStepOptions wo;
    wo.mode = mode_;
    wo.window_taken = options_.window_taken;
    wo.max_stops = options_.max_steps_per_burst;
    wo.stop_timeout_ns = kStopTimeoutNs;
    const uint64_t spent = MonotonicNs() - t0;
    // The budget is checked every few stops: leave room for those, and an eighth for what comes
    // after the last one (int3 bytes restored, debug registers cleared, the thread resumed),
    // which the cap counts too: without it the worst second ran 0.5% over a 4% cap.
    const uint64_t slack = spent + 8 * stop_cost_ns_;
    wo.budget_ns = room > slack ? (room - slack) / 8 * 7 : 1;
    StepContext ctx;
    ctx.reader = &reader_;
    ctx.debug_registers = &threads_[tid].debug_registers;
    ctx.int3 = mode_ == StepMode::kInt3 ? &int3_ : nullptr;
    SteppedWindow w = StepThreadWindow(tid, state.rip, ctx, wo);
    // Every int3 goes before any thread runs on; threads parked at one meanwhile are resumed
    // by the next drain.
    if (mode_ == StepMode::kInt3) {
      int3_.RemoveAll();
      stats_.int3_writes = int3_.writes();
    }
    stats_.steps += w.single_steps;
    stats_.breakpoint_legs += w.breakpoint_legs;
    stats_.lost_step_traps += w.lost_step_traps;
    if (w.breakpoint_legs > 0) legs_worked_ += w.breakpoint_legs;
    bool ok = false;
    switch (w.end) {
      case WindowEnd::kComplete:
        last_window_complete_ = true;
        ok = true;
        break;
      case WindowEnd::kSyscall:
        ok = true;
        break;
      case WindowEnd::kExited:
        OnExit(tid, w.wait_status);
        ++stats_.aborted_exit;
        return false;  // gone: nothing to resume
      case WindowEnd::kSignal:
        // A signal (or an event) instead of our trap: let the program have it.
        ++stats_.aborted_signal;
        HandleEvent(tid, w.wait_status);
        return true;
      case WindowEnd::kStopLimit:
        ++stats_.aborted_steps;
        break;
      case WindowEnd::kBudget:
        ++stats_.aborted_budget;
        break;
      case WindowEnd::kDecode:
        ++stats_.aborted_decode;
        break;
      case WindowEnd::kPtraceError:
      case WindowEnd::kEmulationEnded:  // not a stepped end
        ++stats_.aborted_ptrace;
        break;
      case WindowEnd::kTimedOut:
        ++stats_.aborted_timeout;
        OnTimeout();
        break;
    }
    if (w.thread_stopped) {
      if (w.wait_status != 0)
        HandleEvent(tid, w.wait_status);  // stopped for the program's signal: deliver it
      else
        Resume(tid, 0);
    }
    if (ok && !w.events.empty()) *out = std::move(w);
    return true;
  }

  // kEmulate: the thread is in its interrupt stop; its next window runs in the emulator and the
  // thread resumes where it stopped, unchanged. Returns false when the thread is gone.
  bool EmulateWindow(pid_t tid, std::optional<SteppedWindow>* out) {
    emulator::CpuState start;
    bool in_syscall = false;
    if (!ReadCpuState(tid, &start, &in_syscall)) {
      ++stats_.aborted_exit;
      Resume(tid, 0);
      return true;
    }
    if (in_syscall) {
      ++stats_.aborted_syscall;
      Resume(tid, 0);
      return true;
    }
    if (!emulated_) emulated_.emplace(options_.pid, options_.window_taken);
    EmulatedWindows::Window w;
    emulated_->Run(tid, start, &w, /*other_threads=*/threads_.size() > 1);
    CountEmulated(w);
    SteppedWindow window = AsSteppedWindow(w.emulated);
    if (window.end == WindowEnd::kComplete) last_window_complete_ = true;
    if (!window.events.empty()) *out = std::move(window);
    if (!options_.verify_emulation) {
      Resume(tid, 0);
      resumed_ns_ = MonotonicNs();
      return true;
    }
    const EmulationCheck check = CheckEmulatedWindow(tid, w, reader_);
    CountCheck(check);
    const SteppedWindow& s = check.stepped;
    stats_.steps += s.single_steps;
    stats_.lost_step_traps += s.lost_step_traps;
    if (s.end == WindowEnd::kExited) {
      OnExit(tid, s.wait_status);
      return false;
    }
    if (s.thread_stopped) {
      if (s.wait_status != 0)
        HandleEvent(tid, s.wait_status);  // stopped for the program's signal: deliver it
      else
        Resume(tid, 0);
    }
    return true;
  }

  void CountEmulated(const EmulatedWindows::Window& w) {
    const emulator::EmulatedWindow& e = w.emulated;
    ++stats_.emulated_windows;
    stats_.emulated_instructions += e.instructions;
    stats_.emulation_ns += w.emulate_ns;
    stats_.emulation_pages_read += e.pages_read;
    stats_.emulation_resets = emulated_->resets();
    stats_.emulation_vector_loads = emulated_->stats().vector_loads;
    ++stats_.emulation_ends[static_cast<size_t>(e.end)];
    if (e.mnemonic != 0) ++ending_counts_[{e.mnemonic, static_cast<uint8_t>(e.end)}];
  }

  void CountCheck(const EmulationCheck& check) {
    switch (check.verdict) {
      case EmulationCheck::Verdict::kIdentical:
        ++stats_.verified;
        ++stats_.verify_identical;
        if (check.state_differs) {
          ++stats_.verify_state_differs;
          if (stats_.verify_state_differs <= kNotedDifferences)
            Note("emulation check: identical events, registers differ at the end: " + check.detail);
        }
        break;
      case EmulationCheck::Verdict::kDiverged:
        ++stats_.verified;
        ++stats_.verify_diverged;
        if (stats_.verify_diverged <= kNotedDifferences)
          Note("emulation check: window diverged: " + check.detail);
        break;
      case EmulationCheck::Verdict::kNotChecked:
        ++stats_.verify_unchecked;
        break;
    }
  }

  // The instructions that ended the most emulated windows, most first, into the stats.
  void FillEndingInstructions() {
    std::vector<std::pair<uint64_t, std::pair<uint16_t, uint8_t>>> v;
    for (const auto& [key, n] : ending_counts_) v.push_back({n, key});
    const size_t k = std::min(v.size(), kEndingInstructions);
    std::partial_sort(v.begin(), v.begin() + static_cast<long>(k), v.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    stats_.ending_instructions = {};
    for (size_t i = 0; i < k; ++i) {
      stats_.ending_instructions[i].mnemonic = v[i].second.first;
      stats_.ending_instructions[i].reason = v[i].second.second;
      stats_.ending_instructions[i].windows = v[i].first;
    }
  }

  // A leg or step timed out. A breakpoint mechanism that has never fired here, or that keeps
  // timing out, is given up for the next one that the probe says works.
  void OnTimeout() {
    ++timeouts_;
    if (mode_ == StepMode::kSingleStep) return;
    if (legs_worked_ > 0 && timeouts_ < kTimeoutsBeforeFallback) return;
    const StepMode from = mode_;
    StepMode to = StepMode::kSingleStep;
    if (from == StepMode::kBreakpoints && probe_.int3_breakpoints.works) to = StepMode::kInt3;
    SetMode(to);
    ++stats_.step_mode_fallbacks;
    Note("ptrace bursts: " + std::string(StepModeName(from)) +
         " breakpoints did not fire in time; stepping with " + std::string(StepModeName(to)) +
         " from now on");
  }

  // Before int3s go into the text, every thread must be traced with the int3 options: a thread
  // that runs untraced into one of our bytes dies of SIGTRAP. Scans until no new thread turns
  // up (new ones are seized with the options), then switches over the threads seized in
  // another mode, each at the cost of one stop. False when that failed: int3s are not safe.
  bool EnsureInt3Safe(pid_t stopped) {
    for (int pass = 0; pass < 10 && ScanThreads() > 0; ++pass) {
    }
    std::vector<pid_t> behind;
    for (auto& [tid, t] : threads_)
      if (t.options != DesiredOptions()) behind.push_back(tid);
    for (pid_t tid : behind) {
      auto it = threads_.find(tid);
      if (it == threads_.end()) continue;
      Thread& t = it->second;
      if (tid == stopped) {  // the burst's own thread, in its interrupt stop already
        UpdateOptions(tid, t);
        if (t.options != DesiredOptions()) return false;
        continue;
      }
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) return false;
      int st = 0;
      if (WaitStop(tid, &st, kStopTimeoutNs) != StopWait::kStopped) return false;
      if ((st >> 16) != PTRACE_EVENT_STOP) {
        HandleEvent(tid, st);  // sets the options too, and resumes it
        auto again = threads_.find(tid);
        if (again == threads_.end() || again->second.options != DesiredOptions()) return false;
        continue;
      }
      UpdateOptions(tid, t);
      Resume(tid, 0);
      ChargeEventStops(1, stop_cost_ns_ * 2, MonotonicNs());
      if (t.options != DesiredOptions()) return false;
    }
    return ScanThreads() == 0;
  }

  void EmitWindow(pid_t tid, uint64_t t0, SteppedWindow w, ThreadStack stack) {
    BranchBatch batch;
    batch.pid = static_cast<uint32_t>(options_.pid);
    batch.tid = static_cast<uint32_t>(tid);
    batch.time_ns = t0;
    batch.gap_before = true;
    batch.window = true;
    batch.events = std::move(w.events);
    if (stack.regs.empty())
      ++stats_.stacks_unreadable;
    else
      ++stats_.stacks_read;
    batch.stack = std::move(stack);
    if (outbox_.empty()) outbox_since_ns_ = MonotonicNs();
    wire::AppendWindow(batch, &outbox_);
    ++outbox_windows_;
    if (outbox_.size() >= kOutboxBytes) Flush();
    ++stats_.windows;
    if (w.taken < options_.window_taken) ++stats_.windows_short;
    stats_.events += batch.events.size();
    stats_.taken += w.taken;
    stats_.instructions += w.instructions;
  }

  // Sends the windows batched in the outbox. A pipe the collector has let fill up costs them
  // (counted: they were counted as windows when batched, and move to windows_dropped_pipe).
  void Flush() {
    if (outbox_.empty()) return;
    const wire::SendResult sent = wire::SendBytes(data_fd_, outbox_.data(), outbox_.size());
    if (sent == wire::SendResult::kBroken) quit_ = true;  // the collector is gone
    if (sent == wire::SendResult::kFull) {
      stats_.windows_dropped_pipe += outbox_windows_;
      stats_.windows -= outbox_windows_;
    }
    outbox_.clear();
    outbox_windows_ = 0;
  }

  void SendStats(bool final) {
    Flush();  // the counters describe the windows before them
    stats_sent_ns_ = MonotonicNs();
    stats_.elapsed_ns = MonotonicNs() - start_ns_;
    if (!ending_counts_.empty()) FillEndingInstructions();
    const wire::SendResult r = wire::Send(data_fd_, wire::Type::kStats, &stats_, sizeof stats_);
    if (r == wire::SendResult::kBroken) quit_ = true;
    if (r == wire::SendResult::kFull && final) {
      // The last counters matter: give the collector a moment to drain.
      pollfd p{data_fd_, POLLOUT, 0};
      if (poll(&p, 1, 200) > 0) wire::Send(data_fd_, wire::Type::kStats, &stats_, sizeof stats_);
    }
  }

  // Interrupts every thread and detaches each at its stop, handing back any signal it stopped
  // for and taking back every trace of ours (debug registers, int3s); a thread in a job-control
  // stop stays stopped, as it would without us. Bounded: a thread that does not stop in time
  // is detached by the kernel when this process exits (it is running, so nothing of ours is
  // pending on it).
  void DetachAll() {
    WaitTicker ticker(2000);
    int3_.RemoveAll();
    std::unordered_map<pid_t, bool> pending;
    for (const auto& [tid, t] : threads_)
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) pending[tid] = true;
    for (const auto& [tid, g] : guests_)
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0 || g.stopped_waiting)
        pending[tid] = true;
    const uint64_t deadline = MonotonicNs() + kDetachBudgetNs;
    while (!pending.empty()) {
      int st = 0;
      const pid_t tid = waitpid(-1, &st, __WALL);
      if (tid < 0) {
        if (errno == EINTR && MonotonicNs() < deadline) continue;
        break;  // ECHILD: nothing left traced; or out of time
      }
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        pending.erase(tid);
        if (tid == options_.pid)
          stats_.target_exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        continue;
      }
      if (!WIFSTOPPED(st)) continue;
      const int event = st >> 16;
      int sig = 0;
      if (event == 0) {
        sig = WSTOPSIG(st);
        if (sig == SIGTRAP && SwallowOurTrap(tid))
          sig = 0;
        else
          ++stats_.signals_forwarded;  // deliver it on the way out
      }
      if (auto it = threads_.find(tid); it != threads_.end())
        DisarmDebugRegisters(tid, &it->second.debug_registers);
      if (auto g = guests_.find(tid); g != guests_.end() && g->second.kind != Guest::Kind::kVfork)
        int3_.CleanChild(tid);
      if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        unsigned long child = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
        if (child) pending[static_cast<pid_t>(child)] = true;  // auto-attached: detach it too
      }
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      pending.erase(tid);
    }
    threads_.clear();
    guests_.clear();
  }

  const PtraceBurstOptions options_;
  const int control_fd_;
  const int data_fd_;
  const pid_t parent_;
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

}  // namespace

int RunBurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd, pid_t parent) {
  BurstTracer tracer(options, control_fd, data_fd, parent);
  return tracer.Run();
}

}  // namespace pathprof::stepping
