// Which processes a selector names — a systemd unit, a cgroup and everything below it, or an
// executable file — as one rule for the daemon's continuous series (resolved at a window's start)
// and for a whole-host session's joins (decided on a process's first sample).
#pragma once

#include <string>

namespace pathprof::pipeline {

struct ProcessMatch {
  std::string unit;    // e.g. "nginx.service": a cgroup ending in /unit, or with /unit/ in it
  std::string cgroup;  // a cgroup v2 path: the process's cgroup is it or below it
  // An absolute path: the process runs that file (/proc/PID/exe, " (deleted)" ignored: the file
  // replaced since). Never a comm or a file name, which any user can give their own program.
  std::string executable;

  // None set: every process.
  bool empty() const { return unit.empty() && cgroup.empty() && executable.empty(); }
  // Whether a process with this executable path (/proc/PID/exe) and cgroup v2 path is named
  // (every set field must match).
  bool Matches(const std::string& executable_path, const std::string& cgroup_path) const;
};

}  // namespace pathprof::pipeline
