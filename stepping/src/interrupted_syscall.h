// A thread stopped by PTRACE_INTERRUPT inside a system call, put back as if it had never been
// stopped.
//
// The interrupt wakes a sleeping thread as a signal would. Most blocking calls then return an
// ERESTART* code and the kernel restarts them once the stop ends, unseen. Some never restart,
// whatever SA_RESTART says (signal(7)): epoll_wait, sigtimedwait, a recv or send with
// SO_RCVTIMEO / SO_SNDTIMEO, semop, msgrcv, io_getevents, ... return EINTR, and a program that
// takes EINTR as fatal fails only when profiled. The tracer interrupts only threads it finds
// running (burst_thread_pick.cc), but one can go to sleep between that read and the interrupt;
// those calls are restarted here, as the kernel restarts the others: the system call number back
// in rax, rip back onto the 2-byte syscall instruction. A restarted call waits its whole timeout
// again (a late wake-up, which no timeout excludes), never an EINTR.
//
// A signal of the program's own that is pending (and not blocked) for the thread is what
// interrupted the call, or will be delivered as it returns: then the EINTR is the program's, as
// it would be without a tracer, and is left.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>

namespace pathprof::stepping {

// Where a stopped thread stands with respect to a system call, from its registers: orig_rax
// holds the call's number inside one (-1 outside), rax the result it returns.
enum class SyscallAtStop : uint8_t {
  kNone,         // not in a system call, or one that completed with its own result
  kRestarting,   // an ERESTART* code (512..516): the kernel restarts it when the stop ends
  kInterrupted,  // EINTR: the call ends with EINTR unless restarted (RestartInterruptedSyscall)
};
SyscallAtStop ClassifySyscallAtStop(const user_regs_struct& regs);

enum class SyscallRestart : uint8_t {
  kRestarted,      // the call runs again when the thread resumes
  kSignalPending,  // left: a signal of the program's own interrupted it (or is about to)
  kFailed,         // the registers or the thread's status could not be read or written
};

// `tid` (a thread of `pid`, in a ptrace stop we caused, with `regs` just read) is at
// kInterrupted: restarts the call unless the EINTR is the program's own.
SyscallRestart RestartInterruptedSyscall(pid_t pid, pid_t tid, const user_regs_struct& regs);

// The same from scratch, for a thread at an interrupt stop whose registers were not read: reads
// them and restarts a kInterrupted call. Returns where the thread stood.
SyscallAtStop SettleSyscallAtInterrupt(pid_t pid, pid_t tid, SyscallRestart* restart = nullptr);

}  // namespace pathprof::stepping
