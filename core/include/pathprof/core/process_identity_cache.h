// Who a process is — owner, command name, executable, cgroup — remembered for a short while, so
// that listing every process of the host (the daemon's ListTargets, every continuous-mode window)
// costs one read of each process's stat instead of six files and links. An entry is used only
// while the process's start time and command name (from that one read) are unchanged, so a
// reused pid is never given its predecessor's identity nor an exec'd program its old one, and
// only for max_age, so a move to another cgroup (or an exec of a program with the same name)
// shows within it. Bounded: at most max_entries, the least recently used leaving first.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pathprof/core/procfs.h"
#include "pathprof/core/status.h"

namespace pathprof::procfs {

struct ProcessIdentity {
  pid_t pid = 0;
  uid_t uid = 0;             // the owner of /proc/PID
  uint64_t start_ticks = 0;  // since boot (/proc/PID/stat field 22)
  std::string comm;
  std::string executable;      // empty for a kernel thread, or when this user may not read it
  std::string cgroup;          // the cgroup v2 path
  bool kernel_thread = false;  // no executable and an empty command line
};

struct ProcessIdentityCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;     // read in full: new, reused pid, or older than max_age
  uint64_t evictions = 0;  // the least recently used, at max_entries
  uint64_t entries = 0;
};

class ProcessIdentityCache {
 public:
  struct Options {
    size_t max_entries = 1 << 16;
    std::chrono::milliseconds max_age{2000};
  };
  explicit ProcessIdentityCache(const Procfs& procfs, Options options);
  ProcessIdentityCache(const ProcessIdentityCache&) = delete;
  ProcessIdentityCache& operator=(const ProcessIdentityCache&) = delete;

  // The host's /proc, shared by the daemon's listings (thread-safe).
  static ProcessIdentityCache& Host();

  // kNotFound when the process is gone. Thread-safe.
  Result<ProcessIdentity> Get(pid_t pid);
  // Every process now, kernel threads included (see ProcessIdentity::kernel_thread).
  std::vector<ProcessIdentity> All();

  const Procfs& procfs() const { return procfs_; }
  ProcessIdentityCacheStats stats() const;

 private:
  struct Entry {
    ProcessIdentity identity;
    std::chrono::steady_clock::time_point read_at;
    std::list<pid_t>::iterator lru;
  };
  Result<ProcessIdentity> ReadFull(pid_t pid, uint64_t start_ticks) const;

  const Procfs& procfs_;
  Options options_;
  mutable std::mutex mu_;
  std::unordered_map<pid_t, Entry> entries_;
  std::list<pid_t> lru_;  // most recently used first
  ProcessIdentityCacheStats stats_;
};

}  // namespace pathprof::procfs
