// A line of a process's /proc/PID/status ("Uid", "CapEff", "Seccomp", ...): the tests that
// check what a helper process may do read it. "unreadable" or "absent" where there is none.
#pragma once

#include <sys/types.h>

#include <string>

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

}  // namespace pathprof::testing
