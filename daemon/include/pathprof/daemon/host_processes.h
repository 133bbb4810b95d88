// The processes on this host as /proc shows them (read through core/procfs.h and its identity
// cache): what ListTargets lists and what a session's executable_name / cgroup selector and a
// continuous series resolve to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/process_identity_cache.h"
#include "pathprof/core/status.h"
#include "pathprof/core/sysfs.h"

namespace pathprof::daemon {

struct ProcessEntry {
  uint32_t pid = 0;
  uint32_t uid = 0;
  std::string comm;
  std::string executable;  // readlink /proc/PID/exe; empty for kernel threads or when unreadable
  std::string cgroup;      // the cgroup v2 path ("0::" line of /proc/PID/cgroup)
};

// Every process (not thread) now; kernel threads are skipped (nothing to profile in user space).
// The host's identity cache by default; a test passes one over a fake /proc.
std::vector<ProcessEntry> ListProcesses(
    procfs::ProcessIdentityCache& cache = procfs::ProcessIdentityCache::Host());
// Processes whose comm or executable basename equals `name`.
std::vector<ProcessEntry> ProcessesNamed(
    const std::string& name,
    procfs::ProcessIdentityCache& cache = procfs::ProcessIdentityCache::Host());
// The pids in a cgroup v2 group (cgroup.procs under /sys/fs/cgroup). The path must be absolute
// and may not contain "..".
Result<std::vector<uint32_t>> ProcessesInCgroup(const std::string& cgroup);
// The cgroup v2 path of a systemd unit ("nginx" means nginx.service), found by its directory's
// name under /sys/fs/cgroup as systemd lays units out (a unit under system.slice is preferred
// to a user's unit of the same name). Works without asking systemd, so also from a container
// that sees the host's cgroup tree. kNotFound names the unit; kInvalidArgument when it is
// ambiguous outside system.slice.
Result<std::string> CgroupOfUnit(
    const std::string& unit,
    const std::string& cgroup_root = sysfs::Sysfs::Host().Path("fs/cgroup"));

}  // namespace pathprof::daemon
