#include "pathprof/core/process_identity_cache.h"

namespace pathprof::procfs {

ProcessIdentityCache::ProcessIdentityCache(const Procfs& procfs, Options options)
    : procfs_(procfs), options_(options) {
  if (options_.max_entries == 0) options_.max_entries = 1;
}

ProcessIdentityCache& ProcessIdentityCache::Host() {
  static ProcessIdentityCache host(Procfs::Host(), Options{});
  return host;
}

Result<ProcessIdentity> ProcessIdentityCache::ReadFull(pid_t pid, uint64_t start_ticks) const {
  ProcessIdentity id;
  id.pid = pid;
  id.start_ticks = start_ticks;
  PATHPROF_ASSIGN_OR_RETURN(id.uid, procfs_.Owner(pid));
  if (auto exe = procfs_.Executable(pid); exe.ok()) id.executable = std::move(*exe);
  id.kernel_thread = id.executable.empty() && procfs_.HasEmptyCommandLine(pid);
  if (auto comm = procfs_.Comm(pid); comm.ok()) id.comm = std::move(*comm);
  if (auto cgroup = procfs_.Cgroup(pid); cgroup.ok()) id.cgroup = std::move(*cgroup);
  return id;
}

Result<ProcessIdentity> ProcessIdentityCache::Get(pid_t pid) {
  // The one read every call makes: its start time tells a reused pid from the process cached
  // under it, its command name an exec (which keeps the start time) from the same program.
  PATHPROF_ASSIGN_OR_RETURN(const ProcessStat stat, procfs_.ReadStat(pid));
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(pid);
    if (it != entries_.end() && it->second.identity.start_ticks == stat.start_ticks &&
        it->second.identity.comm == stat.comm && now - it->second.read_at < options_.max_age) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.identity;
    }
  }
  PATHPROF_ASSIGN_OR_RETURN(ProcessIdentity id, ReadFull(pid, stat.start_ticks));
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.misses;
  auto it = entries_.find(pid);
  if (it != entries_.end()) {
    it->second.identity = id;
    it->second.read_at = now;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return id;
  }
  if (entries_.size() >= options_.max_entries) {
    entries_.erase(lru_.back());
    lru_.pop_back();
    ++stats_.evictions;
  }
  lru_.push_front(pid);
  entries_.emplace(pid, Entry{id, now, lru_.begin()});
  stats_.entries = entries_.size();
  return id;
}

std::vector<ProcessIdentity> ProcessIdentityCache::All() {
  std::vector<ProcessIdentity> out;
  for (pid_t pid : procfs_.Pids()) {
    auto id = Get(pid);
    if (id.ok()) out.push_back(std::move(*id));  // one that exited meanwhile is not listed
  }
  return out;
}

ProcessIdentityCacheStats ProcessIdentityCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessIdentityCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

}  // namespace pathprof::procfs
