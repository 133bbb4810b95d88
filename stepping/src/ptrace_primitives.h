// The ptrace operations the tracers are built from, each with a deadline where it can block, and
// each the single place where a simulated host quirk (core/host_quirks.h) is injected, so that
// the probe, the burst stepper and the exact tracer all meet the same misbehaviour.
//
// Bounded waits. waitpid(2) has no timeout. A WaitTicker makes the calling thread's blocking
// system calls return EINTR every few milliseconds (a thread-directed POSIX timer whose signal
// handler does nothing, installed without SA_RESTART); WaitStop then checks its deadline at each
// tick. The clock is read only at ticks, never per stop.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>

namespace pathprof::stepping {

class WaitTicker {
 public:
  // Starts ticking for the calling thread every `period_us` (or, unarmed, once Arm is called).
  // ok() is false when the timer could not be created; WaitStop then polls (slower, still
  // bounded).
  explicit WaitTicker(uint32_t period_us = 5000, bool armed = true);
  ~WaitTicker();
  WaitTicker(const WaitTicker&) = delete;
  WaitTicker& operator=(const WaitTicker&) = delete;
  bool ok() const { return ok_; }
  // A ticker kept for a thread's life and armed only while it waits: one timer_settime each
  // way instead of a timer created and deleted per wait. Waits must happen while armed.
  void Arm(bool on);

 private:
  bool ok_ = false;
  bool armed_ = false;
  uint32_t period_us_ = 0;
  timer_t timer_{};
};

// Arms a kept WaitTicker for a scope.
class TickerArmed {
 public:
  explicit TickerArmed(WaitTicker& t) : t_(t) { t_.Arm(true); }
  ~TickerArmed() { t_.Arm(false); }
  TickerArmed(const TickerArmed&) = delete;
  TickerArmed& operator=(const TickerArmed&) = delete;

 private:
  WaitTicker& t_;
};

enum class StopWait : uint8_t {
  kStopped,   // a ptrace stop: see the status
  kExited,    // the thread exited or was killed (status holds how)
  kTimedOut,  // nothing by the deadline
  kGone,      // no such child to wait for (ECHILD)
};

// Waits for `tid` (a tracee of this thread) to stop or exit, for at least `timeout_ns`. With a
// WaitTicker on this thread the timeout is counted in ticks: no clock is read per stop.
StopWait WaitStop(pid_t tid, int* status, uint64_t timeout_ns);

// The same for any tracee of this thread: *tid says which one stopped or exited.
StopWait WaitAnyStop(pid_t* tid, int* status, uint64_t timeout_ns);

// Registers, to resume it, a thread that is in a ptrace stop we took out of order (see
// SingleStepThread under the lost-trap quirk); WaitStop returns it first.
void PushPendingStatus(pid_t tid, int status);

// PTRACE_SINGLESTEP with `sig` delivered. Under the simulated lost-trap-after-CPUID quirk, a
// step from a CPUID instruction silently runs one more instruction, as the quirky hypervisors
// do. False when ptrace refused (ESRCH: the thread is gone or not stopped).
bool SingleStepThread(pid_t tid, int sig = 0);

// x86 debug registers DR0..DR3 (addresses) and DR7 (control) of a stopped tracee. Under the
// simulated no-DR quirk, DR7 writes are accepted and read back but never reach the hardware, so
// the breakpoints never fire.
bool PokeDebugRegister(pid_t tid, int index, uint64_t value);
bool PeekDebugRegister(pid_t tid, int index, uint64_t* value);

bool ReadRip(pid_t tid, uint64_t* rip);
// rip and EFLAGS in one request. The kernel hides the trap flag its own single step set: a TF
// read here is the program's (set by a popf or iret it ran).
bool ReadRipAndFlags(pid_t tid, uint64_t* rip, uint64_t* rflags);
bool WriteRip(pid_t tid, uint64_t rip);
// EFLAGS.RF: the next instruction ignores its execute breakpoint (x86 resume flag).
bool SetResumeFlag(pid_t tid);
// The siginfo of the signal `tid` is stopped for; false when it is not in a signal stop.
bool StopSigInfo(pid_t tid, siginfo_t* info);

inline constexpr uint64_t kTrapFlag = 0x100;  // EFLAGS.TF: a trap after every instruction

// si_code of the SIGTRAP stops the tracers cause.
inline constexpr int kTrapTrace = 2;    // TRAP_TRACE: a single step
inline constexpr int kTrapHwBkpt = 4;   // TRAP_HWBKPT: a debug-register breakpoint
inline constexpr int kTrapInt3 = 0x80;  // SI_KERNEL: an int3 instruction

}  // namespace pathprof::stepping
