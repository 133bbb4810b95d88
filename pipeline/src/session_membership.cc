// Session: which processes have a store (the targets; followed children; with every_process any
// process, up to a bound, the coldest evicted for a hotter newcomer) and a confined session's
// check of its targets' credentials.
#include <unistd.h>

#include <algorithm>
#include <set>
#include <vector>

#include "pathprof/core/process_identity_cache.h"
#include "process_tree.h"
#include "session_impl.h"

namespace pathprof::pipeline {

void Session::Impl::CheckConfinement(uint32_t pid) {
  auto it = confinement.find(pid);
  if (it == confinement.end() || revoked.load()) return;
  auto creds = ReadTargetCredentials(pid);
  if (!creds.ok()) return;  // exited: the liveness check handles it
  const std::string gain = PrivilegeGain(*creds, it->second);
  if (gain.empty()) return;
  std::lock_guard<std::mutex> lock(mu);
  if (revoked.exchange(true)) return;
  revoked_reason = "stopped collecting: pid " + std::to_string(pid) +
                   " now holds privileges its requester (uid " + std::to_string(it->second.uid) +
                   ") does not: " + gain +
                   " (after an exec of a setuid, setgid or file-capability program?); the "
                   "profile keeps what was collected before";
}
void Session::Impl::CheckEveryConfinement() {
  for (const auto& [pid, who] : confinement) CheckConfinement(pid);
}

std::shared_ptr<ProfileStore> Session::Impl::Lookup(uint32_t pid) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = stores.find(pid);
  if (it != stores.end()) return it->second;
  // Only the sampler's in-kernel filter admits other pids: with follow_children only
  // descendants of the targets, with every_process any process but this one. The first sample
  // of one makes its store.
  if (!config.follow_children && !config.every_process) return nullptr;
  if (config.every_process && pid == static_cast<uint32_t>(getpid())) return nullptr;
  if (!JoinsLocked(pid)) return nullptr;
  if (descendants >= config.max_descendants && !EvictColderThanLocked(pid)) {
    ++descendants_over_limit;
    return nullptr;
  }
  // Branch sources stay on the targets: a descendant's store has stacks only. In whole-host
  // mode the snapshot source's windows reach every process, so each store takes them.
  auto store = ProfileStore::Create(
      pid, config, config.every_process ? stores_windows : BranchWindows::kNone, symbols);
  if (!store.ok()) return nullptr;
  ++descendants;
  live_descendants.insert(pid);
  if (export_shared) (*store)->ShareExportBuffer(export_shared);
  return stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(*store))).first->second;
}

// Whether a process without a store may join (under mu): any, unless the whole-host session
// has a join_match. A process found not to match is not looked at again for a second (a
// unit's process starts in its parent's cgroup and is moved; a shell forks, then execs).
bool Session::Impl::JoinsLocked(uint32_t pid) {
  if (!config.every_process || config.join_match.empty()) return true;
  const auto now = std::chrono::steady_clock::now();
  if (auto it = unmatched.find(pid); it != unmatched.end()) {
    if (now - it->second < std::chrono::seconds(1)) return false;
    unmatched.erase(it);
  }
  auto who = procfs::ProcessIdentityCache::Host().Get(static_cast<pid_t>(pid));
  if (who.ok() && config.join_match.Matches(who->executable, who->cgroup)) return true;
  if (unmatched.size() >= 4 * static_cast<size_t>(config.max_descendants)) unmatched.clear();
  unmatched[pid] = now;
  return false;
}

// Whole-host mode at its bound (under mu): the process `pid`, refused a store, gets the place
// of the coldest one (the fewest samples applied) once it has been refused more samples than
// that store ever received. So the window keeps the processes that are hot in it, a long tail
// of one-sample processes does not churn the stores, and the count (hence the memory) stays
// bounded; the evicted process's samples are counted as process_evicted (SettleRetired).
bool Session::Impl::EvictColderThanLocked(uint32_t pid) {
  if (!config.every_process || stores.empty()) return false;
  if (refused.size() >= 4 * static_cast<size_t>(config.max_descendants)) refused.clear();
  const uint64_t mine = ++refused[pid];
  auto coldest = std::min_element(stores.begin(), stores.end(), [](const auto& a, const auto& b) {
    return a.second->generation() < b.second->generation();
  });
  const uint64_t theirs = coldest->second->generation();
  if (theirs >= mine) return false;
  live_descendants.erase(coldest->first);
  retired.push_back(std::move(coldest->second));
  stores.erase(coldest);
  --descendants;
  refused.erase(pid);
  // The newcomer's refused samples were counted as process_limit; they stay counted there.
  return true;
}

// Evicted stores nothing else holds any more: their samples (as process_evicted) and their
// losses move to `first`, and they are freed.
void Session::Impl::SettleRetired(ProfileStore& first) {
  std::vector<std::shared_ptr<ProfileStore>> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = retired.begin(); it != retired.end();) {
      if (it->use_count() == 1) {
        done.push_back(std::move(*it));
        it = retired.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& store : done) {
    const TargetAccounting& a = store->accounting();
    if (const uint64_t n = a.stack_samples.load())
      first.accounting().drops.Add("process_evicted", n);
    for (const auto& [reason, n] : a.drops.Snapshot()) first.accounting().drops.Add(reason, n);
    for (const auto& [reason, n] : a.decode_errors.Snapshot())
      first.accounting().decode_errors.Add(reason, n);
    for (const auto& [reason, n] : a.windows_held_back.Snapshot())
      first.accounting().windows_held_back.Add(reason, n);
    for (const auto& [source, n] : a.windows_by_source.Snapshot())
      first.accounting().windows_by_source.Add(source, n);
  }
}

// The session's losses that belong to no one process go to its first (a target, or with
// every_process the first process that was sampled); none before any store exists.
std::shared_ptr<ProfileStore> Session::Impl::FirstStore() {
  if (!config.pids.empty()) return Lookup(config.pids.front());
  std::lock_guard<std::mutex> lock(mu);
  return stores.empty() ? nullptr : stores.begin()->second;
}

// Followed children (and, in whole-host mode, joined processes) that exited: each store notes
// the exit (its profile is kept) and the pid leaves the sources' filters, before it can be reused
// by an unrelated process. Each poll asks the kernel whether every pid still exists (kill with
// signal 0, no /proc read), so a reaped process is noted at once. One that exited but was not
// reaped yet (a zombie: no other process can take its pid meanwhile) shows only in its /proc
// stat, which each poll reads for up to kStatReadsPerPoll of them in turn: with every process of
// a busy host joined, ten stat reads a second each (under the session's lock) were a large share
// of the daemon's CPU (docs/performance.md, "System-wide continuous mode").
void Session::Impl::NoteDescendantExits() {
  constexpr size_t kStatReadsPerPoll = 32;
  std::vector<uint32_t> pids;  // ascending: a set's order
  {
    std::lock_guard<std::mutex> lock(mu);
    pids.assign(live_descendants.begin(), live_descendants.end());
  }
  std::set<uint32_t> exited;
  for (uint32_t pid : pids)
    if (!ProcessExists(pid)) exited.insert(pid);
  const size_t first =
      std::upper_bound(pids.begin(), pids.end(), zombie_check_after) - pids.begin();
  for (size_t k = 0; k < std::min(pids.size(), kStatReadsPerPoll); ++k) {
    const uint32_t pid = pids[(first + k) % pids.size()];
    zombie_check_after = pid;
    if (!exited.count(pid) && !ProcessAlive(pid)) exited.insert(pid);
  }
  std::vector<std::pair<uint32_t, std::shared_ptr<ProfileStore>>> gone;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t pid : exited)
      if (live_descendants.erase(pid) > 0) gone.emplace_back(pid, stores.at(pid));
  }
  for (auto& [pid, store] : gone) {
    store->NoteExit();
    NoteProcessGone(pid);
  }
}

void Session::Impl::NoteProcessGone(uint32_t pid) {
  for (Running& r : sources) r.source->ProcessGone(pid);
}

}  // namespace pathprof::pipeline
