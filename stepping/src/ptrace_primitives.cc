#include "ptrace_primitives.h"

#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <mutex>
#include <unordered_map>

#include "pathprof/core/clock.h"
#include "pathprof/core/host_quirks.h"

namespace pathprof::stepping {
namespace {

// A real-time signal nothing else in pathprof uses; glibc keeps SIGRTMIN..+2 for itself.
int TickSignal() {
  return SIGRTMIN + 4;
}

void OnTick(int) {}

thread_local int t_tickers = 0;              // WaitTickers alive on this thread
thread_local uint64_t t_tick_period_ns = 0;  // the shortest of their periods

std::mutex g_pending_mu;
std::unordered_map<pid_t, int> g_pending;  // stops taken out of order (quirk simulation)

bool TakePending(pid_t tid, int* status) {
  std::lock_guard<std::mutex> lock(g_pending_mu);
  auto it = g_pending.find(tid);
  if (it == g_pending.end()) return false;
  *status = it->second;
  g_pending.erase(it);
  return true;
}

// The simulated DR7 of each thread (no-dr-breakpoints quirk): what a read gives back.
std::mutex g_dr7_mu;
std::unordered_map<pid_t, uint64_t> g_shadow_dr7;

long DrOffset(int i) {
  return static_cast<long>(offsetof(struct user, u_debugreg) +
                           static_cast<size_t>(i) * sizeof(long));
}

StopWait Classify(int status) {
  return WIFSTOPPED(status) ? StopWait::kStopped : StopWait::kExited;
}

}  // namespace

WaitTicker::WaitTicker(uint32_t period_us, bool armed) : period_us_(period_us) {
  struct sigaction sa {};
  sa.sa_handler = OnTick;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the point is to interrupt waitpid
  if (sigaction(TickSignal(), &sa, nullptr) != 0) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, TickSignal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = TickSignal();
  ev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer_) != 0) return;
  ok_ = true;
  if (armed) Arm(true);
}

// Only armed tickers count for WaitStop: with none, it polls instead of blocking in waitpid.
void WaitTicker::Arm(bool on) {
  if (!ok_ || on == armed_) return;
  itimerspec spec{};
  if (on) {
    spec.it_interval.tv_sec = period_us_ / 1000000;
    spec.it_interval.tv_nsec = static_cast<long>(period_us_ % 1000000) * 1000;
    spec.it_value = spec.it_interval;
  }
  if (timer_settime(timer_, 0, &spec, nullptr) != 0) return;
  armed_ = on;
  if (on) {
    if (t_tickers++ == 0 || period_us_ * 1000ull < t_tick_period_ns)
      t_tick_period_ns = period_us_ * 1000ull;
  } else {
    --t_tickers;
  }
}

WaitTicker::~WaitTicker() {
  if (!ok_) return;
  Arm(false);
  timer_delete(timer_);
}

StopWait WaitStop(pid_t tid, int* status, uint64_t timeout_ns) {
  pid_t who = tid;
  return WaitAnyStop(&who, status, timeout_ns);
}

StopWait WaitAnyStop(pid_t* who, int* status, uint64_t timeout_ns) {
  const pid_t tid = *who;  // -1: any
  if (tid > 0 && TakePending(tid, status)) return Classify(*status);
  if (tid < 0) {
    std::lock_guard<std::mutex> lock(g_pending_mu);
    if (!g_pending.empty()) {
      *who = g_pending.begin()->first;
      *status = g_pending.begin()->second;
      g_pending.erase(g_pending.begin());
      return Classify(*status);
    }
  }
  if (t_tickers == 0) {
    const uint64_t deadline_ns = MonotonicNs() + timeout_ns;
    // No ticker on this thread: poll, backing off to 1 ms. Bounded, only slower.
    for (long sleep_ns = 2000;; sleep_ns = std::min(sleep_ns * 2, 1000000L)) {
      const pid_t r = waitpid(tid, status, __WALL | WNOHANG);
      if (r > 0) {
        *who = r;
        return Classify(*status);
      }
      if (r < 0 && errno != EINTR) return StopWait::kGone;
      if (MonotonicNs() >= deadline_ns) return StopWait::kTimedOut;
      timespec ts{0, sleep_ns};
      nanosleep(&ts, nullptr);
    }
  }
  // The first tick may come at once, so one more than the timeout holds; another signal that
  // interrupts the wait counts as a tick (it can only make the wait end early, never hang).
  const uint64_t ticks = timeout_ns / t_tick_period_ns + 2;
  for (uint64_t seen = 0;;) {
    const pid_t r = waitpid(tid, status, __WALL);
    if (r > 0) {
      *who = r;
      return Classify(*status);
    }
    if (r < 0 && errno == EINTR) {
      if (++seen >= ticks) return StopWait::kTimedOut;
      continue;
    }
    return StopWait::kGone;
  }
}

void PushPendingStatus(pid_t tid, int status) {
  std::lock_guard<std::mutex> lock(g_pending_mu);
  g_pending[tid] = status;
}

bool SingleStepThread(pid_t tid, int sig) {
  const auto data = reinterpret_cast<void*>(static_cast<long>(sig));
  if (SimulatedQuirks().lost_trap_after_cpuid) {
    uint64_t rip = 0;
    errno = 0;
    const long word = ReadRip(tid, &rip)
                          ? ptrace(PTRACE_PEEKTEXT, tid, reinterpret_cast<void*>(rip), nullptr)
                          : 0;
    const bool cpuid = errno == 0 && (word & 0xffff) == 0xa20f;  // 0f a2
    if (cpuid) {
      // Step the CPUID and swallow its trap, then step on: the caller sees one stop, one
      // instruction late. Anything else that stopped the thread is handed to its next wait.
      if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, data) != 0) return false;
      int st = 0;
      const StopWait w = WaitStop(tid, &st, 1000000000ull);
      if (w != StopWait::kStopped || WSTOPSIG(st) != SIGTRAP || (st >> 16) != 0) {
        if (w == StopWait::kStopped || w == StopWait::kExited) PushPendingStatus(tid, st);
        return true;
      }
      return ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr) == 0;
    }
  }
  return ptrace(PTRACE_SINGLESTEP, tid, nullptr, data) == 0;
}

bool PokeDebugRegister(pid_t tid, int index, uint64_t value) {
  uint64_t real = value;
  if (index == 7 && SimulatedQuirks().no_dr_breakpoints) {
    std::lock_guard<std::mutex> lock(g_dr7_mu);
    g_shadow_dr7[tid] = value;
    real = 0;  // armed as far as anyone can tell, but nothing will fire
  }
  return ptrace(PTRACE_POKEUSER, tid, reinterpret_cast<void*>(DrOffset(index)),
                reinterpret_cast<void*>(real)) == 0;
}

bool PeekDebugRegister(pid_t tid, int index, uint64_t* value) {
  errno = 0;
  const long v = ptrace(PTRACE_PEEKUSER, tid, reinterpret_cast<void*>(DrOffset(index)), nullptr);
  if (errno != 0) return false;
  *value = static_cast<uint64_t>(v);
  if (index == 7 && SimulatedQuirks().no_dr_breakpoints) {
    std::lock_guard<std::mutex> lock(g_dr7_mu);
    auto it = g_shadow_dr7.find(tid);
    if (it != g_shadow_dr7.end()) *value = it->second;
  }
  return true;
}

bool ReadRip(pid_t tid, uint64_t* rip) {
  errno = 0;
  const long v = ptrace(PTRACE_PEEKUSER, tid,
                        reinterpret_cast<void*>(offsetof(user_regs_struct, rip)), nullptr);
  if (errno != 0) return false;
  *rip = static_cast<uint64_t>(v);
  return true;
}

bool ReadRipAndFlags(pid_t tid, uint64_t* rip, uint64_t* rflags) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return false;
  *rip = regs.rip;
  *rflags = regs.eflags;
  return true;
}

bool WriteRip(pid_t tid, uint64_t rip) {
  return ptrace(PTRACE_POKEUSER, tid, reinterpret_cast<void*>(offsetof(user_regs_struct, rip)),
                reinterpret_cast<void*>(rip)) == 0;
}

bool SetResumeFlag(pid_t tid) {
  constexpr uint64_t kResumeFlag = 1ull << 16;
  const auto off = reinterpret_cast<void*>(offsetof(user_regs_struct, eflags));
  errno = 0;
  const long v = ptrace(PTRACE_PEEKUSER, tid, off, nullptr);
  if (errno != 0) return false;
  return ptrace(PTRACE_POKEUSER, tid, off,
                reinterpret_cast<void*>(static_cast<uint64_t>(v) | kResumeFlag)) == 0;
}

bool StopSigInfo(pid_t tid, siginfo_t* info) {
  return ptrace(PTRACE_GETSIGINFO, tid, nullptr, info) == 0;
}

}  // namespace pathprof::stepping
