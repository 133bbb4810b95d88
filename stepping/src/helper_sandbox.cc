#include "pathprof/stepping/helper_sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "pathprof/core/procfs.h"

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

std::string Allow(scmp_filter_ctx ctx, const std::vector<int>& calls) {
  for (int nr : calls)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0); rc != 0) return Failed("allow", rc);
  return "";
}

std::string Kill(scmp_filter_ctx ctx, const std::vector<int>& calls) {
  for (int nr : calls)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0); rc != 0)
      return Failed("kill", rc);
  return "";
}

// What every helper does: its descriptors, its heap, its clocks (a clock read is a system call
// on hosts whose vDSO clock is off, and a thread's CPU clock always is), signals, its exit.
const std::vector<int>& CommonCalls() {
  static const std::vector<int> calls = {
      SCMP_SYS(read),
      SCMP_SYS(pread64),
      SCMP_SYS(readv),
      SCMP_SYS(preadv),
      SCMP_SYS(write),
      SCMP_SYS(writev),
      SCMP_SYS(lseek),
      SCMP_SYS(close),
      SCMP_SYS(fstat),
      SCMP_SYS(fcntl),
      SCMP_SYS(ppoll),
      SCMP_SYS(poll),
      SCMP_SYS(clock_gettime),
      SCMP_SYS(clock_getres),
      SCMP_SYS(gettimeofday),
      SCMP_SYS(clock_nanosleep),
      SCMP_SYS(nanosleep),
      SCMP_SYS(rt_sigaction),
      SCMP_SYS(rt_sigprocmask),
      SCMP_SYS(rt_sigreturn),
      SCMP_SYS(sigaltstack),
      SCMP_SYS(getpid),
      SCMP_SYS(gettid),
      SCMP_SYS(getppid),
      SCMP_SYS(getuid),
      SCMP_SYS(geteuid),
      SCMP_SYS(getgid),
      SCMP_SYS(getegid),
      SCMP_SYS(getresuid),
      SCMP_SYS(getresgid),
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
  };
  return calls;
}

// What the tracer adds after its attach (traced with strace in every step mode): its tracees,
// their memory and /proc files, its signalfd and timers, its threads' placement.
const std::vector<int>& TracerCalls() {
  static const std::vector<int> calls = {
      SCMP_SYS(ptrace),
      SCMP_SYS(wait4),
      SCMP_SYS(waitid),
      SCMP_SYS(process_vm_readv),
      SCMP_SYS(pwrite64),
      SCMP_SYS(newfstatat),
      SCMP_SYS(statx),
      SCMP_SYS(getdents64),
      SCMP_SYS(readlink),
      SCMP_SYS(readlinkat),
      SCMP_SYS(ioctl),
      SCMP_SYS(pselect6),
      SCMP_SYS(timer_create),
      SCMP_SYS(timer_settime),
      SCMP_SYS(timer_gettime),
      SCMP_SYS(timer_delete),
      SCMP_SYS(rt_sigtimedwait),
      SCMP_SYS(tgkill),
      SCMP_SYS(sched_getaffinity),
      SCMP_SYS(sched_setaffinity),
  };
  return calls;
}

// A helper's socket: messages and the descriptors they carry, on the socket it was given.
const std::vector<int>& SocketCalls() {
  static const std::vector<int> calls = {SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(recvfrom),
                                         SCMP_SYS(sendto)};
  return calls;
}

// The emulator's: its socket, and its own deadline on a batch (alarm: SIGALRM ends it).
const std::vector<int>& EmulatorCalls() {
  static const std::vector<int> calls = [] {
    std::vector<int> calls = SocketCalls();
    calls.push_back(SCMP_SYS(alarm));
    return calls;
  }();
  return calls;
}

// The importer's files: the binaries a recording names, found by path, build-id or a binary
// directory's index (stat, listings, links), and libipt's own reads of them.
const std::vector<int>& ImporterCalls() {
  static const std::vector<int> calls = {
      SCMP_SYS(newfstatat), SCMP_SYS(statx),     SCMP_SYS(getdents64), SCMP_SYS(readlink),
      SCMP_SYS(readlinkat), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(access)};
  return calls;
}

// The symbolizer's: its socket and deadline like the emulator's, and read-only looks at files
// like the importer's (libdw opens the DWARF supplement, .gnu_debugaltlink, a debug file names).
const std::vector<int>& SymbolizerCalls() {
  static const std::vector<int> calls = [] {
    std::vector<int> both = EmulatorCalls();  // the socket and alarm
    both.insert(both.end(), ImporterCalls().begin(), ImporterCalls().end());
    return both;
  }();
  return calls;
}

const std::vector<int>& RoleCalls(SandboxRole role) {
  switch (role) {
    case SandboxRole::kTracer:
      return TracerCalls();
    case SandboxRole::kEmulator:
      return EmulatorCalls();
    case SandboxRole::kSymbolizer:
      return SymbolizerCalls();
    case SandboxRole::kImporter:
      break;
  }
  return ImporterCalls();
}

}  // namespace

std::string EnterHelperSandbox(const SandboxPolicy& policy) {
  const bool tracer = policy.role == SandboxRole::kTracer;
  const bool opens_files =
      tracer || policy.role == SandboxRole::kImporter || policy.role == SandboxRole::kSymbolizer;
  // no_new_privs first: an unprivileged process may install a filter only with it, and it keeps
  // an exec (were one allowed) from gaining anything.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  Filter filter(seccomp_init(SCMP_ACT_ERRNO(EPERM)), &seccomp_release);
  if (filter == nullptr) return "seccomp: seccomp_init failed";
  scmp_filter_ctx ctx = filter.get();
  if (std::string e = Allow(ctx, CommonCalls()); !e.empty()) return e;
  if (std::string e = Allow(ctx, RoleCalls(policy.role)); !e.empty()) return e;
  // prctl: reading its own settings only; PR_SET_PDEATHSIG is set before the sandbox.
  for (int option : {PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                                  SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(option)));
        rc != 0)
      return Failed("allow prctl", rc);
  }
  // Files, the tracer, the importer and the symbolizer only: read-only opens (/proc files of
  // the target, its memory; the binaries a recording names; DWARF supplements), and with text
  // writes the target's memory read-write; never created, truncated or appended to. The emulator
  // opens nothing: it reads what it was handed.
  const scmp_datum_t never =
      O_CREAT | O_TRUNC | O_APPEND | O_WRONLY | (policy.allow_text_writes ? 0 : O_RDWR);
  if (opens_files || kSanitizerRuntime) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                                  SCMP_A2(SCMP_CMP_MASKED_EQ, never, 0));
        rc != 0)
      return Failed("allow openat", rc);
  }
  // Threads (the tracer's), and with a sanitizer runtime its leak checker's task; glibc tries
  // clone3 first and falls back to clone on ENOSYS, whose flags a filter can see.
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0)
    return Failed("clone3", rc);
  if (kSanitizerRuntime) {
    // Its runtime also probes whether memory is readable through a pipe, its reports open
    // /proc/self files with open(2), and its leak checker lists and stops this process's threads.
    if (std::string e =
            Allow(ctx, {SCMP_SYS(clone), SCMP_SYS(pipe2), SCMP_SYS(pipe), SCMP_SYS(getdents),
                        SCMP_SYS(getdents64), SCMP_SYS(prctl), SCMP_SYS(ptrace), SCMP_SYS(wait4),
                        SCMP_SYS(readlink), SCMP_SYS(sched_getaffinity)});
        !e.empty())
      return e;
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, never, 0));
        rc != 0)
      return Failed("allow open for the sanitizer", rc);
  } else {
    if (tracer) {
      if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
          rc != 0)
        return Failed("allow clone", rc);
      if (int rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                                    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
          rc != 0)
        return Failed("kill clone", rc);
    } else if (std::string e =
                   Kill(ctx, opens_files ? std::vector<int>{SCMP_SYS(clone), SCMP_SYS(ptrace)}
                                         : std::vector<int>{SCMP_SYS(clone), SCMP_SYS(openat),
                                                            SCMP_SYS(ptrace)});
               !e.empty()) {
      return e;
    }
    if (std::string e = Kill(ctx, {SCMP_SYS(open)}); !e.empty()) return e;
  }
  // What only an exploit would call: the helper dies instead of running it.
  if (std::string e =
          Kill(ctx, {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
                     SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
                     SCMP_SYS(creat), SCMP_SYS(setuid), SCMP_SYS(setresuid), SCMP_SYS(setgid),
                     SCMP_SYS(setresgid), SCMP_SYS(process_vm_writev), SCMP_SYS(kill)});
      !e.empty())
    return e;
  if (int rc = seccomp_load(ctx); rc != 0) return Failed("load", rc);
  return "";
}

std::string DropIdentity(uid_t uid, gid_t gid) {
  if (setgroups(0, nullptr) != 0) return std::string("setgroups: ") + std::strerror(errno);
  if (setresgid(gid, gid, gid) != 0) return std::string("setresgid: ") + std::strerror(errno);
  if (setresuid(uid, uid, uid) != 0) return std::string("setresuid: ") + std::strerror(errno);
  // From a non-root daemon (the packaged one runs as `pathprof` with ambient capabilities) the
  // uid change keeps the capabilities: drop every one explicitly (dropping needs none).
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  if (syscall(SYS_capset, &header, none) != 0)
    return std::string("capset: ") + std::strerror(errno);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  uid_t r, e, s;
  if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid)
    return "the uid did not change to " + std::to_string(uid);
  // Capabilities left after this would mean a way back: refuse to run then.
  // This thread's status: capabilities are per thread. Unreadable counts as a failure.
  auto status = procfs::Procfs::Host().ReadTask(getpid(), static_cast<pid_t>(syscall(SYS_gettid)),
                                                "status", 64 << 10);
  if (!status.ok()) return "cannot check the capabilities left: " + status.status().message();
  for (const char* key : {"CapPrm", "CapEff"}) {
    const auto value = procfs::StatusField(*status, key);
    if (!value || value->find_first_not_of('0') != std::string_view::npos)
      return "capabilities survived the uid change";
  }
  return "";
}

bool ParseHelperNumber(const char* text, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != 0 || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

void SimulateExploit(const char* fault) {
#ifdef NDEBUG
  (void)fault;  // release builds have no hook
#else
  if (fault == nullptr) return;
  if (std::strcmp(fault, "exec") == 0) {
    char* const argv[] = {const_cast<char*>("/bin/sh"), nullptr};
    execve(argv[0], argv, nullptr);
  }
  if (std::strcmp(fault, "write") == 0) {
    // Through a volatile address, so that no compiler sees a known bad one (-Warray-bounds).
    volatile uintptr_t address = 0x10;
    *reinterpret_cast<volatile uint64_t*>(address) = 0x41414141;
  }
  if (std::strcmp(fault, "hang") == 0)
    for (;;) poll(nullptr, 0, -1);  // pause(2) is on no helper's allowlist
#endif
}

bool HoldsPrivilege() {
  if (geteuid() == 0) return true;
  // Effective and ambient capabilities are both within the permitted set.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (syscall(SYS_capget, &header, caps) != 0) return true;  // unknown: assume the worst
  return (caps[0].permitted | caps[1].permitted) != 0;
}

void NobodyIdentity(uid_t* uid, gid_t* gid) {
  *uid = 65534;
  *gid = 65534;
  // getpwnam_r: the daemon is multithreaded. A small buffer: the entry is one line.
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (getpwnam_r("nobody", &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    *uid = found->pw_uid;
    *gid = found->pw_gid;
  }
}

}  // namespace pathprof::stepping
