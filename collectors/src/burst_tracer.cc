#include "burst_tracer.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "burst_wire.h"
#include "pathprof/collectors/step_classifier.h"

namespace pathprof::collectors {
namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool IsGroupStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// Thread ids under /proc/PID/task, read with plain syscalls (this process was forked from a
// possibly multi-threaded one, so it avoids anything that takes library-global locks).
std::vector<pid_t> ListTasks(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    out.push_back(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
  }
  closedir(d);
  return out;
}

// The scheduler state letter of one thread ('R' running, 'S' sleeping, ...), or 0.
char ThreadState(pid_t pid, pid_t tid) {
  std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // The command name may hold spaces and parentheses: the state follows the last ')'.
  char* p = std::strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : 0;
}

struct Thread {
  bool group_stopped = false;
};

class BurstTracer {
 public:
  BurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd)
      : options_(options),
        control_fd_(control_fd),
        data_fd_(data_fd),
        reader_(options.pid),
        rng_(options.seed ? options.seed : NowNs()) {}

  int Run() {
    start_ns_ = NowNs();
    if (!SetUpSignals()) return Fail("burst tracer: signalfd failed: " + Errno());
    std::string error;
    if (!AttachAll(&error)) {
      DetachAll();
      return Fail(error);
    }
    if (!wire::Send(data_fd_, wire::Type::kReady, nullptr, 0)) {
      DetachAll();
      return 1;
    }
    Loop();
    DetachAll();
    stats_.detached = true;
    SendStats();
    return 0;
  }

 private:
  static std::string Errno() { return std::strerror(errno); }

  int Fail(const std::string& message) {
    wire::Send(data_fd_, wire::Type::kError, message.data(), static_cast<uint32_t>(message.size()));
    return 1;
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

  // Seizes every thread, repeating the scan until it finds no new one: threads cloned by an
  // already seized thread are attached by the kernel (PTRACE_O_TRACECLONE), the others we catch
  // on the next pass.
  bool AttachAll(std::string* error) {
    const long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
    for (int pass = 0; pass < 100; ++pass) {
      bool added = false;
      for (pid_t tid : ListTasks(options_.pid)) {
        if (threads_.count(tid)) continue;
        if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(opts)) != 0) {
          if (errno == ESRCH) continue;  // exited meanwhile
          if (errno == EPERM && threads_.empty()) {
            *error = "burst tracer: PTRACE_SEIZE of process " + std::to_string(options_.pid) +
                     " refused (EPERM). " + PermissionHint();
            return false;
          }
          if (threads_.empty()) {
            *error = "burst tracer: PTRACE_SEIZE of thread " + std::to_string(tid) +
                     " failed: " + Errno();
            return false;
          }
          continue;
        }
        threads_.emplace(tid, Thread{});
        ++stats_.threads_attached;
        added = true;
      }
      if (!added) break;
    }
    if (threads_.empty()) {
      *error = "burst tracer: process " + std::to_string(options_.pid) + " has no threads left";
      return false;
    }
    return true;
  }

  static std::string PermissionHint() {
    std::string hint;
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char c = 0;
      if (read(fd, &c, 1) == 1)
        hint += std::string("Yama kernel.yama.ptrace_scope is ") + c +
                (c == '3' ? " (ptrace disabled until reboot). "
                          : "; set it to 0 with 'sysctl -w kernel.yama.ptrace_scope=0', or ");
      close(fd);
    }
    hint +=
        "run pathprof as root or with CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep, or "
        "AmbientCapabilities=CAP_SYS_PTRACE in the unit); in a container add --cap-add "
        "SYS_PTRACE and a seccomp profile that allows ptrace";
    return hint;
  }

  void Loop() {
    uint64_t next_burst = NowNs() + NextGap(0);
    while (!quit_ && !threads_.empty()) {
      uint64_t now = NowNs();
      int timeout_ms = 0;
      if (next_burst > now) timeout_ms = static_cast<int>((next_burst - now) / 1000000 + 1);
      if (timeout_ms > 100) timeout_ms = 100;
      pollfd fds[2] = {{control_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      int n = poll(fds, 2, timeout_ms);
      if (n < 0 && errno != EINTR) break;
      if (n > 0 && fds[0].revents) {
        char c;
        ssize_t r = read(control_fd_, &c, 1);
        if (r <= 0 || c == 'q') quit_ = true;  // EOF: the collector is gone or stopping
      }
      if (n > 0 && fds[1].revents) DrainSignals();
      DrainEvents();
      if (quit_ || threads_.empty()) break;
      if (NowNs() >= next_burst) {
        uint64_t stopped = Burst();
        SendStats();
        next_burst = NowNs() + NextGap(stopped);
      }
    }
    if (threads_.empty()) stats_.target_exited = true;
  }

  // Mean gap 1/rate, stretched so that bursts of the last one's cost stay under the stopped
  // fraction cap; uniform jitter in [0.5, 1.5] of that against aliasing.
  uint64_t NextGap(uint64_t last_stopped_ns) {
    double mean = 1e9 / options_.bursts_per_second;
    double floor = static_cast<double>(last_stopped_ns) / options_.max_stopped_fraction;
    if (floor > mean) mean = floor;
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return static_cast<uint64_t>(mean * jitter(rng_));
  }

  void DrainSignals() {
    signalfd_siginfo si;
    while (read(signal_fd_, &si, sizeof si) == sizeof si) {
      if (si.ssi_signo != SIGCHLD) quit_ = true;
    }
  }

  void DrainEvents() {
    int st;
    pid_t tid;
    while ((tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0) HandleEvent(tid, st);
  }

  void OnExit(pid_t tid, int st) {
    if (threads_.erase(tid)) ++stats_.threads_exited;
    if (tid == options_.pid) {
      stats_.target_exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (threads_.empty()) stats_.target_exited = true;
  }

  void Resume(pid_t tid, int sig) {
    if (ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig))) != 0 &&
        errno == ESRCH) {
      // Killed under us; its exit status arrives through waitpid.
    }
  }

  void Note(const std::string& text) {
    wire::Send(data_fd_, wire::Type::kNote, text.data(), static_cast<uint32_t>(text.size()));
  }

  // A stop of a thread that is not in a burst (or an event inside one that is not a step).
  void HandleEvent(pid_t tid, int st) {
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      OnExit(tid, st);
      return;
    }
    if (!WIFSTOPPED(st)) return;
    const int sig = WSTOPSIG(st);
    const int event = st >> 16;
    if (threads_.emplace(tid, Thread{}).second) ++stats_.threads_attached;
    Thread& t = threads_[tid];
    switch (event) {
      case PTRACE_EVENT_CLONE: {
        unsigned long child = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
        if (child && threads_.emplace(static_cast<pid_t>(child), Thread{}).second)
          ++stats_.threads_attached;
        Resume(tid, 0);
        return;
      }
      case PTRACE_EVENT_EXEC: {
        ++stats_.execs;
        reader_.Reset();  // new images: cached instructions are stale
        // exec leaves one thread, with the process id; the others are gone.
        for (auto it = threads_.begin(); it != threads_.end();) {
          if (it->first != options_.pid) {
            ++stats_.threads_exited;
            it = threads_.erase(it);
          } else {
            ++it;
          }
        }
        threads_.emplace(options_.pid, Thread{});
        Note("process " + std::to_string(options_.pid) + " exec'd: images changed");
        Resume(tid, 0);
        return;
      }
      case PTRACE_EVENT_STOP:
        if (IsGroupStopSignal(sig)) {
          // Job control: stay stopped until SIGCONT, as without us.
          ++stats_.group_stops;
          t.group_stopped = true;
          ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
          return;
        }
        t.group_stopped = false;  // an interrupt or a new thread's first stop
        Resume(tid, 0);
        return;
      case 0:
        // Signal-delivery stop: the program's signal; hand it back.
        ++stats_.signals_forwarded;
        Resume(tid, sig);
        return;
      default:
        Resume(tid, 0);
        return;
    }
  }

  // Picks the next thread round robin, preferring one that is running: interrupting a sleeping
  // thread would find it in a system call with nothing to step.
  pid_t PickThread() {
    std::vector<pid_t> tids;
    for (const auto& [tid, t] : threads_)
      if (!t.group_stopped) tids.push_back(tid);
    if (tids.empty()) return -1;
    std::sort(tids.begin(), tids.end());
    pid_t fallback = -1;
    for (size_t i = 0; i < tids.size(); ++i) {
      pid_t tid = tids[(rr_ + i) % tids.size()];
      char s = ThreadState(options_.pid, tid);
      if (s == 'R') {
        rr_ = (rr_ + i + 1) % tids.size();
        return tid;
      }
      if (fallback < 0 && s != 0) fallback = tid;
    }
    rr_ = (rr_ + 1) % tids.size();
    return fallback;
  }

  // Waits for tid's next stop or exit, handling no one else's events (they wait in the kernel).
  bool WaitThread(pid_t tid, int* st) {
    for (;;) {
      pid_t r = waitpid(tid, st, __WALL);
      if (r == tid) return true;
      if (r < 0 && errno == EINTR) continue;
      return false;
    }
  }

  // One burst; returns the nanoseconds the thread spent stopped.
  uint64_t Burst() {
    pid_t tid = PickThread();
    if (tid < 0) {
      ++stats_.skipped_no_thread;
      return 0;
    }
    const uint64_t t0 = NowNs();
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      if (errno == ESRCH) {
        ++stats_.skipped_no_thread;
      }
      return 0;
    }
    ++stats_.bursts;
    // Wait for the interrupt stop; anything else this thread reports first is handled normally.
    int st = 0;
    for (;;) {
      if (!WaitThread(tid, &st)) {
        ++stats_.aborted_exit;
        threads_.erase(tid);
        return NowNs() - t0;
      }
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP && !IsGroupStopSignal(WSTOPSIG(st)))
        break;
      HandleEvent(tid, st);
      if (!WIFSTOPPED(st) || (st >> 16) == PTRACE_EVENT_STOP) {
        // Exited, or entered a job-control stop: no burst now.
        if (WIFSTOPPED(st))
          ++stats_.aborted_signal;
        else
          ++stats_.aborted_exit;
        return NowNs() - t0;
      }
    }
    const uint64_t stopped = StepWindow(tid, t0);
    stats_.stopped_ns += stopped;
    return stopped;
  }

  // The thread is in its interrupt stop: step it through one window and let it go.
  uint64_t StepWindow(pid_t tid, uint64_t t0) {
    StoppedThreadState state;
    if (!ReadStoppedThread(tid, &state)) {
      ++stats_.aborted_exit;
      Resume(tid, 0);
      return NowNs() - t0;
    }
    if (state.in_restartable_syscall) {
      ++stats_.aborted_syscall;
      Resume(tid, 0);
      return NowNs() - t0;
    }
    BranchBatch batch;
    batch.pid = static_cast<uint32_t>(options_.pid);
    batch.tid = static_cast<uint32_t>(tid);
    batch.time_ns = t0;
    batch.gap_before = true;
    batch.window = true;
    uint64_t rip = state.rip;
    const decoders::X86Instruction* pending = reader_.At(rip);
    uint32_t insns = 0, taken = 0;
    uint64_t steps = 0;
    bool ok = true;
    while (ok) {
      if (!pending) {
        ++stats_.aborted_decode;
        ok = false;
        break;
      }
      // A system call may block for any time with the thread single-stepping and us waiting:
      // end the window before it.
      if (pending->is_branch && pending->kind == BranchKind::kFarTransfer) break;
      if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr) != 0) {
        ok = false;
        ++stats_.aborted_exit;
        break;
      }
      int st = 0;
      if (!WaitThread(tid, &st) || WIFEXITED(st) || WIFSIGNALED(st)) {
        OnExit(tid, st);
        ++stats_.aborted_exit;
        stats_.steps += steps;
        return NowNs() - t0;  // gone: nothing to resume
      }
      if (!(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0)) {
        // A signal (or an event) instead of the step's trap: let the program have it.
        ++stats_.aborted_signal;
        stats_.steps += steps;
        HandleEvent(tid, st);
        return NowNs() - t0;
      }
      ++steps;
      errno = 0;
      long v = ptrace(PTRACE_PEEKUSER, tid,
                      reinterpret_cast<void*>(offsetof(user_regs_struct, rip)), nullptr);
      if (errno != 0) {
        ++stats_.aborted_exit;
        ok = false;
        break;
      }
      rip = static_cast<uint64_t>(v);
      ClassifiedStep c = ClassifyStep(*pending, rip);
      if (c.result != StepResult::kRepeat) ++insns;
      if (c.result == StepResult::kBranch || c.result == StepResult::kUnexpected) {
        c.event.instructions = static_cast<uint16_t>(insns > 0xffff ? 0xffff : insns);
        insns = 0;
        batch.events.push_back(c.event);
        if (c.event.taken) ++taken;
        if (taken >= options_.window_taken) break;
      }
      if (steps >= options_.max_steps_per_burst) {
        ++stats_.aborted_steps;
        ok = false;
        break;
      }
      pending = reader_.At(rip);
    }
    stats_.steps += steps;
    Resume(tid, 0);
    const uint64_t stopped = NowNs() - t0;
    if (ok && !batch.events.empty()) {
      ++stats_.windows;
      if (taken < options_.window_taken) ++stats_.windows_short;
      stats_.events += batch.events.size();
      stats_.taken += taken;
      if (!wire::SendWindow(data_fd_, batch)) quit_ = true;  // the collector is gone
    }
    return stopped;
  }

  void SendStats() {
    stats_.elapsed_ns = NowNs() - start_ns_;
    if (!wire::Send(data_fd_, wire::Type::kStats, &stats_, sizeof stats_)) quit_ = true;
  }

  // Interrupts every thread and detaches each at its stop, handing back any signal it stopped
  // for; a thread in a job-control stop stays stopped, as it would without us.
  void DetachAll() {
    std::unordered_map<pid_t, bool> pending;
    for (const auto& [tid, t] : threads_) {
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) pending[tid] = true;
    }
    threads_.clear();
    while (!pending.empty()) {
      int st = 0;
      pid_t tid = waitpid(-1, &st, __WALL);
      if (tid < 0) {
        if (errno == EINTR) continue;
        break;  // ECHILD: nothing left traced
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
        sig = WSTOPSIG(st);  // a signal-delivery stop: deliver it on the way out
        ++stats_.signals_forwarded;
      }
      if (event == PTRACE_EVENT_CLONE) {
        unsigned long child = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
        if (child) pending[static_cast<pid_t>(child)] = true;  // auto-attached: detach it too
      }
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      pending.erase(tid);
    }
  }

  const PtraceBurstOptions options_;
  const int control_fd_;
  const int data_fd_;
  int signal_fd_ = -1;
  bool quit_ = false;
  uint64_t start_ns_ = 0;
  size_t rr_ = 0;
  InstructionReader reader_;
  std::mt19937_64 rng_;
  std::unordered_map<pid_t, Thread> threads_;
  PtraceBurstStats stats_;
};

}  // namespace

int RunBurstTracer(const PtraceBurstOptions& options, int control_fd, int data_fd) {
  BurstTracer tracer(options, control_fd, data_fd);
  return tracer.Run();
}

}  // namespace pathprof::collectors
