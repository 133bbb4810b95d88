// What the packaged daemon is: not root, but a user with ambient capabilities (which an exec
// passes on). Tests that check what the daemon's helpers keep from such a process become one in
// a forked child.
#pragma once

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/wait.h>

#include <functional>
#include <initializer_list>
#include <string>

namespace pathprof::testing {

// Makes this (single-threaded, forked) process uid and gid `id`, no groups, with `caps`
// effective, permitted, inheritable and ambient. Empty on success, else what failed. Needs root.
inline std::string BecomeUserWithCapabilities(uid_t id, std::initializer_list<int> caps) {
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setgroups(0, nullptr) != 0 ||
      setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0)
    return "the uid change failed";
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  for (int cap : caps) {
    data[cap / 32].effective |= 1u << (cap % 32);
    data[cap / 32].permitted |= 1u << (cap % 32);
    data[cap / 32].inheritable |= 1u << (cap % 32);
  }
  if (syscall(SYS_capset, &header, data) != 0) return "capset failed";
  for (int cap : caps)
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0)
      return "raising an ambient capability failed";
  return "";
}

// Runs `body` in a forked child that became `id` with `caps` (BecomeUserWithCapabilities): what
// it returns, or "setup: ..." when the child could not become that user. The child exits
// without running the parent's destructors or test harness.
inline std::string InChildAsCapableUser(uid_t id, std::initializer_list<int> caps,
                                        const std::function<std::string()>& body) {
  int report[2];
  if (pipe(report) != 0) return "setup: pipe failed";
  const pid_t child = fork();
  if (child < 0) return "setup: fork failed";
  if (child == 0) {
    close(report[0]);
    std::string e = BecomeUserWithCapabilities(id, caps);
    const std::string out = e.empty() ? body() : "setup: " + e;
    (void)!write(report[1], out.data(), out.size());
    _exit(0);
  }
  close(report[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  close(report[0]);
  waitpid(child, nullptr, 0);
  return got;
}

}  // namespace pathprof::testing
