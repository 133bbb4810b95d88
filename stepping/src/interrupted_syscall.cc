#include "interrupted_syscall.h"

#include <errno.h>
#include <sys/ptrace.h>

#include <optional>

#include "signal_masks.h"

namespace pathprof::stepping {
namespace {

// The kernel's ERESTARTSYS .. ERESTART_RESTARTBLOCK, never seen by a program.
constexpr long kRestartFirst = 512;
constexpr long kRestartLast = 516;
constexpr unsigned kSyscallInstructionBytes = 2;  // syscall, sysenter and int 0x80 alike

}  // namespace

SyscallAtStop ClassifySyscallAtStop(const user_regs_struct& regs) {
  if (static_cast<long>(regs.orig_rax) < 0) return SyscallAtStop::kNone;
  const long rax = static_cast<long>(regs.rax);
  if (rax <= -kRestartFirst && rax >= -kRestartLast) return SyscallAtStop::kRestarting;
  if (rax == -EINTR) return SyscallAtStop::kInterrupted;
  return SyscallAtStop::kNone;
}

SyscallRestart RestartInterruptedSyscall(pid_t pid, pid_t tid, const user_regs_struct& regs) {
  // A signal pending that the thread does not block is delivered as the call returns.
  const std::optional<SignalMasks> masks = ReadSignalMasks(pid, tid);
  if (!masks) return SyscallRestart::kFailed;
  if ((masks->pending & ~masks->blocked) != 0) return SyscallRestart::kSignalPending;
  user_regs_struct again = regs;
  again.rax = regs.orig_rax;
  again.rip = regs.rip - kSyscallInstructionBytes;
  if (ptrace(PTRACE_SETREGS, tid, nullptr, &again) != 0) return SyscallRestart::kFailed;
  return SyscallRestart::kRestarted;
}

SyscallAtStop SettleSyscallAtInterrupt(pid_t pid, pid_t tid, SyscallRestart* restart) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return SyscallAtStop::kNone;
  const SyscallAtStop at = ClassifySyscallAtStop(regs);
  if (at == SyscallAtStop::kInterrupted) {
    const SyscallRestart r = RestartInterruptedSyscall(pid, tid, regs);
    if (restart) *restart = r;
  }
  return at;
}

}  // namespace pathprof::stepping
