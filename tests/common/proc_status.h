// What the tests that check a helper process read of it: a line of its /proc/PID/status
// ("Uid", "CapEff", "Seccomp", ...; "unreadable" or "absent" where there is none), and the
// helper itself among its parent's children.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <thread>

#include "pathprof/core/procfs.h"

namespace pathprof::testing {

inline std::string ProcStatusLine(pid_t pid, const char* key) {
  auto text = procfs::Procfs::Host().Read(pid, "status", 64 << 10);
  if (!text.ok()) return "unreadable";
  auto v = procfs::StatusField(*text, key);
  return v ? std::string(*v) : "absent";
}

// The first (real) uid of a Uid line.
inline std::string FirstField(const std::string& line) {
  return line.substr(0, line.find_first_of(" \t"));
}

// A child of `parent` whose comm (15 characters at most) is `comm`, other than `other_than`:
// looked for at once and then every 20 ms for up to `within`; -1 when none showed.
inline pid_t ChildNamed(pid_t parent, const std::string& comm,
                        std::chrono::milliseconds within = std::chrono::milliseconds(0),
                        pid_t other_than = -1) {
  const procfs::Procfs& proc = procfs::Procfs::Host();
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    for (pid_t pid : proc.Pids()) {
      if (pid == other_than) continue;
      auto stat = proc.ReadStat(pid);
      if (stat.ok() && stat->ppid == parent && stat->comm == comm) return pid;
    }
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace pathprof::testing
