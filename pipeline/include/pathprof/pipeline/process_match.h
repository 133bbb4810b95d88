// Which processes a selector names — a systemd unit, a cgroup and everything below it, or an
// executable — as one rule for the daemon's continuous series (resolved at a window's start) and
// for a whole-host session's joins (decided on a process's first sample).
#pragma once

#include <string>

namespace pathprof::pipeline {

struct ProcessMatch {
  std::string unit;        // e.g. "nginx.service": a cgroup ending in /unit, or with /unit/ in it
  std::string cgroup;      // a cgroup v2 path: the process's cgroup is it or below it
  std::string executable;  // comm, or the executable's basename (" (deleted)" ignored)

  // None set: every process.
  bool empty() const { return unit.empty() && cgroup.empty() && executable.empty(); }
  // Whether a process with this comm, executable path and cgroup v2 path is named (every set
  // field must match).
  bool Matches(const std::string& comm, const std::string& executable_path,
               const std::string& cgroup_path) const;
};

// The executable's file name, without a trailing " (deleted)" (the binary was replaced).
std::string ExecutableBasename(const std::string& executable_path);

}  // namespace pathprof::pipeline
