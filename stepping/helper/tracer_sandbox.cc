#include "tracer_sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <memory>

namespace pathprof::stepping {
namespace {

// The sanitizer runtimes' leak check stops the process's threads from a helper task of its own
// (clone without CLONE_THREAD) at exit; only a sanitizer build needs that.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerRuntime = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerRuntime = true;
#else
constexpr bool kSanitizerRuntime = false;
#endif
#else
constexpr bool kSanitizerRuntime = false;
#endif

using Filter = std::unique_ptr<void, decltype(&seccomp_release)>;

std::string Failed(const char* what, int rc) {
  return std::string("seccomp: ") + what + ": " + std::strerror(-rc);
}

}  // namespace

std::string EnterTracerSandbox(const TracerSandboxOptions& options) {
  // no_new_privs first: an unprivileged process may install a filter only with it, and it keeps
  // an exec (were one allowed) from gaining anything.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  Filter filter(seccomp_init(SCMP_ACT_ERRNO(EPERM)), &seccomp_release);
  if (filter == nullptr) return "seccomp: seccomp_init failed";
  scmp_filter_ctx ctx = filter.get();
  // What the tracer does after its attach (traced with strace in every step mode): its tracees,
  // their memory and /proc files, its pipes and signalfd, its timers and clocks (a clock read
  // is a system call on hosts whose vDSO clock is off), its heap, its exit.
  for (int nr : {
           SCMP_SYS(ptrace),
           SCMP_SYS(wait4),
           SCMP_SYS(waitid),
           SCMP_SYS(process_vm_readv),
           SCMP_SYS(read),
           SCMP_SYS(pread64),
           SCMP_SYS(readv),
           SCMP_SYS(preadv),
           SCMP_SYS(write),
           SCMP_SYS(pwrite64),
           SCMP_SYS(writev),
           SCMP_SYS(lseek),
           SCMP_SYS(close),
           SCMP_SYS(fstat),
           SCMP_SYS(newfstatat),
           SCMP_SYS(statx),
           SCMP_SYS(getdents64),
           SCMP_SYS(readlink),
           SCMP_SYS(readlinkat),
           SCMP_SYS(ioctl),
           SCMP_SYS(fcntl),
           SCMP_SYS(ppoll),
           SCMP_SYS(poll),
           SCMP_SYS(pselect6),
           SCMP_SYS(timer_create),
           SCMP_SYS(timer_settime),
           SCMP_SYS(timer_gettime),
           SCMP_SYS(timer_delete),
           SCMP_SYS(clock_gettime),
           SCMP_SYS(clock_getres),
           SCMP_SYS(gettimeofday),
           SCMP_SYS(clock_nanosleep),
           SCMP_SYS(nanosleep),
           SCMP_SYS(rt_sigaction),
           SCMP_SYS(rt_sigprocmask),
           SCMP_SYS(rt_sigreturn),
           SCMP_SYS(sigaltstack),
           SCMP_SYS(rt_sigtimedwait),
           SCMP_SYS(tgkill),
           SCMP_SYS(getpid),
           SCMP_SYS(gettid),
           SCMP_SYS(getppid),
           SCMP_SYS(getuid),
           SCMP_SYS(geteuid),
           SCMP_SYS(getgid),
           SCMP_SYS(getegid),
           SCMP_SYS(getresuid),
           SCMP_SYS(getresgid),
           SCMP_SYS(sched_getaffinity),
           SCMP_SYS(sched_setaffinity),
           SCMP_SYS(sched_yield),
           SCMP_SYS(getrandom),
           SCMP_SYS(mmap),
           SCMP_SYS(munmap),
           SCMP_SYS(mremap),
           SCMP_SYS(mprotect),
           SCMP_SYS(madvise),
           SCMP_SYS(brk),
           SCMP_SYS(futex),
           SCMP_SYS(getrlimit),
           SCMP_SYS(prlimit64),
           SCMP_SYS(uname),
           SCMP_SYS(restart_syscall),
           SCMP_SYS(exit),
           SCMP_SYS(exit_group),
       }) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0); rc != 0) return Failed("allow", rc);
  }
  // prctl: reading its own settings only; PR_SET_PDEATHSIG is set before the sandbox.
  for (int option : {PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                                  SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(option)));
        rc != 0)
      return Failed("allow prctl", rc);
  }
  // Files: read-only opens (/proc files of the target, its memory), and with text writes the
  // target's memory read-write; never created, truncated or appended to.
  const scmp_datum_t never =
      O_CREAT | O_TRUNC | O_APPEND | O_WRONLY | (options.allow_text_writes ? 0 : O_RDWR);
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                                SCMP_A2(SCMP_CMP_MASKED_EQ, never, 0));
      rc != 0)
    return Failed("allow openat", rc);
  // Threads, and with a sanitizer runtime its leak checker's task; glibc tries clone3 first and
  // falls back to clone on ENOSYS, whose flags a filter can see.
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0)
    return Failed("clone3", rc);
  if (kSanitizerRuntime) {
    // Its runtime also probes whether memory is readable through a pipe, its reports open
    // /proc/self files with open(2), and its leak checker lists and stops this process's threads.
    for (int nr :
         {SCMP_SYS(clone), SCMP_SYS(pipe2), SCMP_SYS(pipe), SCMP_SYS(getdents), SCMP_SYS(prctl)})
      if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0); rc != 0)
        return Failed("allow for the sanitizer", rc);
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, never, 0));
        rc != 0)
      return Failed("allow open for the sanitizer", rc);
  } else {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
        rc != 0)
      return Failed("allow clone", rc);
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
        rc != 0)
      return Failed("kill clone", rc);
  }
  // What only an exploit would call: the tracer dies instead of running it.
  for (int nr :
       {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(socket),
        SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(creat), SCMP_SYS(setuid),
        SCMP_SYS(setresuid), SCMP_SYS(process_vm_writev), SCMP_SYS(kill)}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0); rc != 0)
      return Failed("kill", rc);
  }
  if (!kSanitizerRuntime)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(open), 0); rc != 0)
      return Failed("kill open", rc);
  if (int rc = seccomp_load(ctx); rc != 0) return Failed("load", rc);
  return "";
}

}  // namespace pathprof::stepping
