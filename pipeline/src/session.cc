#include "pathprof/pipeline/session.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pathprof/collectors/lbr_source.h"
#include "pathprof/collectors/pt_source.h"
#include "pathprof/collectors/shared_stack_sampler.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/process_identity_cache.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/ingestor.h"
#include "pathprof/pipeline/kernel_frames.h"
#include "pathprof/profiles/pprof_export.h"
#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/stepping/step_probe.h"
#include "target_credentials.h"

namespace pathprof::pipeline {
namespace {

// Every live descendant of `roots` now, from the parent pids in /proc/*/stat (bounded by what
// the sampler's filter can hold).
std::vector<uint32_t> Descendants(const std::vector<uint32_t>& roots) {
  std::map<uint32_t, std::vector<uint32_t>> children;
  const procfs::Procfs& proc = procfs::Procfs::Host();
  for (pid_t pid : proc.Pids()) {
    auto stat = proc.ReadStat(pid);
    if (stat.ok())
      children[static_cast<uint32_t>(stat->ppid)].push_back(static_cast<uint32_t>(pid));
  }
  std::vector<uint32_t> out;
  std::vector<uint32_t> todo(roots.begin(), roots.end());
  while (!todo.empty() && out.size() < 4096) {
    const uint32_t pid = todo.back();
    todo.pop_back();
    for (uint32_t child : children[pid]) {
      out.push_back(child);
      todo.push_back(child);
    }
  }
  return out;
}

// True while the process exists and is not a zombie.
bool ProcessAlive(uint32_t pid) {
  auto stat = procfs::Procfs::Host().ReadStat(static_cast<pid_t>(pid));
  return stat.ok() && stat->state != 'Z' && stat->state != 'X';
}

// The mode the tracer reported using, said once and briefly: asked for, or auto, the step
// probe's choice (stepping::ChooseStepMode on the probe it read, cached for this boot), whose
// whole reasoning `pathctl caps` prints. Should the two ever differ (a tracer that probed apart,
// as another user), both are said, with this process's reason.
std::string StepModeReport(std::optional<stepping::StepMode> requested, stepping::StepMode used) {
  const stepping::StepModeChoice choice =
      stepping::ChooseStepMode(requested, stepping::CachedStepProbe());
  const std::string name(stepping::StepModeName(used));
  if (choice.ok && choice.mode == used)
    return name +
           (requested ? " (asked for)" : " (auto: the step probe's choice, see pathctl caps)");
  return name + " (this process's probe decides " +
         std::string(stepping::StepModeName(choice.mode)) + ": " + choice.reason + ")";
}

std::string ShortDetail(const std::string& detail) {
  return detail.size() > 160 ? detail.substr(0, 157) + "..." : detail;
}

}  // namespace

std::string_view SessionStateName(SessionState s) {
  return WordOf(kSessionStateWords, s);
}

Result<collectors::BranchSource> ChooseBranchSource(SourceChoice choice,
                                                    const collectors::HostCapabilities& caps,
                                                    std::string* reason) {
  using collectors::BranchSource;
  auto explicit_source = [&](BranchSource s,
                             const collectors::SourceCapability& cap) -> Result<BranchSource> {
    const std::string name(collectors::BranchSourceName(s));
    if (!cap.available)
      return Status(ErrorCode::kUnavailable,
                    name + " was asked for but is not available here: " + cap.detail +
                        " (use --source auto to take the best available)");
    *reason = "asked for";
    return s;
  };
  switch (choice) {
    case SourceChoice::kNone:
      *reason = "asked for (stacks only)";
      return BranchSource::kNone;
    case SourceChoice::kPtrace:
      return explicit_source(BranchSource::kPtraceBursts, caps.ptrace);
    case SourceChoice::kLbr:
      return explicit_source(BranchSource::kLbr, caps.lbr);
    case SourceChoice::kIntelPt:
      return explicit_source(BranchSource::kIntelPt, caps.intel_pt);
    case SourceChoice::kAuto:
      break;
  }
  const BranchSource best = caps.BestBranchSource();
  std::string why;
  if (best != BranchSource::kIntelPt)
    why += "; PT unavailable: " + ShortDetail(caps.intel_pt.detail);
  if (best != BranchSource::kIntelPt && best != BranchSource::kLbr)
    why += "; LBR unavailable: " + ShortDetail(caps.lbr.detail);
  if (best == BranchSource::kNone)
    why += "; ptrace unavailable: " + ShortDetail(caps.ptrace.detail);
  *reason = "auto (best available" + (best == BranchSource::kIntelPt ? ")" : ")" + why);
  return best;
}

struct Session::Impl {
  std::string id;
  SessionConfig config;
  std::shared_ptr<SymbolService> symbols;

  mutable std::mutex mu;
  std::condition_variable ended_cv;
  SessionInfo info;
  // Shrinks only in whole-host mode, where the coldest store leaves for a hotter newcomer:
  // callers hold a store through its shared_ptr.
  std::map<uint32_t, std::shared_ptr<ProfileStore>> stores;
  uint32_t descendants = 0;             // stores made for followed children (or any process)
  std::set<uint32_t> live_descendants;  // ... whose exit was not noted yet
  uint64_t descendants_over_limit = 0;  // samples of children past max_descendants
  // Whole-host mode at max_descendants: the samples each process without a store was refused
  // (bounded: forgotten at 4 x max_descendants entries).
  std::unordered_map<uint32_t, uint64_t> refused;
  // With a join_match: processes found not to match, and when (checked again a second later;
  // bounded: forgotten at 4 x max_descendants entries).
  std::unordered_map<uint32_t, std::chrono::steady_clock::time_point> unmatched;
  // Evicted stores, until nothing else holds them (an ingest thread may be applying a sample):
  // then their samples and losses are counted on the first store, exactly, and they are freed.
  std::vector<std::shared_ptr<ProfileStore>> retired;
  std::map<std::string, std::set<PathKey>> baselines;

  std::unique_ptr<Ingestor> ingestor;
  std::unique_ptr<collectors::StackSubscription> sampler;  // on the process's one sampler
  std::map<uint32_t, std::unique_ptr<stepping::PtraceBurstCollector>> bursts;
  std::map<uint32_t, stepping::PtraceBurstStats> burst_seen;  // for drop deltas
  collectors::StackSubscriptionStats sampler_seen;
  // The live perf sources (one kind per session), polled by `live`.
  std::map<uint32_t, std::unique_ptr<collectors::LbrSource>> lbr;
  std::map<uint32_t, std::unique_ptr<collectors::PtSource>> pt;
  std::map<uint32_t, collectors::LiveSourceCounters> live_seen;  // for drop deltas
  std::thread live;
  std::atomic<bool> live_stop{false};

  std::thread control;
  std::atomic<bool> stop_requested{false};
  bool torn_down = false;

  // A non-admin's session: what each target may hold (config.confine_to_uid). Once a target
  // holds more, `revoked` is set: nothing more is collected, what was is kept.
  std::map<uint32_t, Confinement> confinement;
  std::atomic<bool> revoked{false};
  std::string revoked_reason;  // under mu
  std::atomic<uint64_t> windows_after_revocation{0};

  // Reads the target's credentials now; on a gain, revokes the session (the control loop then
  // stops the collectors). Safe from any thread, including a collector's callback.
  void CheckConfinement(uint32_t pid) {
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
  void CheckEveryConfinement() {
    for (const auto& [pid, who] : confinement) CheckConfinement(pid);
  }

  std::shared_ptr<ProfileStore> Lookup(uint32_t pid) {
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
    // Branch sources stay on the targets: a descendant's store has stacks only.
    auto store = ProfileStore::Create(pid, config, BranchWindows::kNone, symbols);
    if (!store.ok()) return nullptr;
    ++descendants;
    live_descendants.insert(pid);
    return stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(*store))).first->second;
  }

  // Whether a process without a store may join (under mu): any, unless the whole-host session
  // has a join_match. A process found not to match is not looked at again for a second (a
  // unit's process starts in its parent's cgroup and is moved; a shell forks, then execs).
  bool JoinsLocked(uint32_t pid) {
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
  bool EvictColderThanLocked(uint32_t pid) {
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
  void SettleRetired(ProfileStore& first) {
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
    }
  }

  // The session's losses that belong to no one process go to its first (a target, or with
  // every_process the first process that was sampled); none before any store exists.
  std::shared_ptr<ProfileStore> FirstStore() {
    if (!config.pids.empty()) return Lookup(config.pids.front());
    std::lock_guard<std::mutex> lock(mu);
    return stores.empty() ? nullptr : stores.begin()->second;
  }

  // A followed child that exited: its profile is kept; its pid leaves the kernel's filter
  // (before the pid can be reused by an unrelated process).
  void NoteDescendantExits() {
    std::vector<std::pair<uint32_t, std::shared_ptr<ProfileStore>>> gone;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto it = live_descendants.begin(); it != live_descendants.end();) {
        if (ProcessAlive(*it)) {
          ++it;
          continue;
        }
        gone.emplace_back(*it, stores.at(*it));
        it = live_descendants.erase(it);
      }
    }
    for (auto& [pid, store] : gone) {
      store->NoteExit();
      if (sampler) (void)sampler->RemovePid(pid);
    }
  }

  // Collector counters -> the targets' drop reasons, as deltas since the last call.
  void AccountCollectors(const std::map<uint32_t, stepping::PtraceBurstStats>* final = nullptr) {
    if (sampler) {
      const collectors::StackSubscriptionStats st = sampler->stats();
      // The session's losses (its targets' in the host's ring) go to the first target.
      if (std::shared_ptr<ProfileStore> first = FirstStore()) {
        uint64_t over_limit = 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          over_limit = std::exchange(descendants_over_limit, 0);
        }
        if (over_limit > 0)
          first->accounting().drops.Add(config.every_process ? "process_limit" : "descendant_limit",
                                        over_limit);
        SettleRetired(*first);
        if (st.stack_copies_failed > sampler_seen.stack_copies_failed)
          first->accounting().decode_errors.Add(
              "stack_copy_failed", st.stack_copies_failed - sampler_seen.stack_copies_failed);
        if (st.ringbuf_full > sampler_seen.ringbuf_full)
          first->accounting().drops.Add("ebpf_ringbuf_full",
                                        st.ringbuf_full - sampler_seen.ringbuf_full);
        if (st.filtered_credentials > sampler_seen.filtered_credentials)
          first->accounting().drops.Add(
              "stack_after_privilege_gain",
              st.filtered_credentials - sampler_seen.filtered_credentials);
        sampler_seen = st;  // losses before the first store are told to it once it exists
      }
    }
    for (auto& [pid, collector] : bursts) {
      const stepping::PtraceBurstStats st =
          final != nullptr && final->contains(pid) ? final->at(pid) : collector->stats();
      stepping::PtraceBurstStats& seen = burst_seen[pid];
      std::shared_ptr<ProfileStore> store = Lookup(pid);
      if (store == nullptr) continue;
      auto delta = [&](const char* reason, uint64_t now, uint64_t before) {
        if (now > before) store->accounting().drops.Add(reason, now - before);
      };
      delta("burst_aborted_syscall", st.aborted_syscall, seen.aborted_syscall);
      delta("burst_aborted_signal", st.aborted_signal, seen.aborted_signal);
      delta("burst_aborted_exit", st.aborted_exit, seen.aborted_exit);
      delta("burst_aborted_steps", st.aborted_steps, seen.aborted_steps);
      delta("burst_skipped_no_thread", st.skipped_no_thread, seen.skipped_no_thread);
      if (st.aborted_decode > seen.aborted_decode)
        store->accounting().decode_errors.Add("burst_undecodable_instruction",
                                              st.aborted_decode - seen.aborted_decode);
      seen = st;
    }
    for (auto& [pid, source] : lbr) AccountLive(pid, source->counters());
    for (auto& [pid, source] : pt) AccountLive(pid, source->counters());
  }

  void AccountLive(uint32_t pid, const collectors::LiveSourceCounters& now) {
    std::shared_ptr<ProfileStore> store = Lookup(pid);
    if (store == nullptr) return;
    collectors::LiveSourceCounters& seen = live_seen[pid];
    for (const auto& [reason, n] : now.drops)
      if (n > seen.drops[reason]) store->accounting().drops.Add(reason, n - seen.drops[reason]);
    for (const auto& [reason, n] : now.decode_errors)
      if (n > seen.decode_errors[reason])
        store->accounting().decode_errors.Add(reason, n - seen.decode_errors[reason]);
    seen = now;
  }

  // Opens the LBR or PT event on every target. All or nothing: a target that cannot be traced
  // fails the lot, naming it.
  Status StartLiveSources(collectors::BranchSource source) {
    auto sink = [this](const BranchBatch& b) { ingestor->OfferBranches(b); };
    for (uint32_t pid : config.pids) {
      Status st;
      if (source == collectors::BranchSource::kLbr) {
        collectors::LbrSourceOptions o;
        o.pid = static_cast<pid_t>(pid);
        o.sample_period = config.sampling.lbr_period;
        auto started = collectors::LbrSource::Start(o, sink);
        if (started.ok()) lbr.emplace(pid, std::move(*started));
        st = started.status();
      } else {
        collectors::PtSourceOptions o;
        o.pid = static_cast<pid_t>(pid);
        auto started = collectors::PtSource::Start(o, sink);
        if (started.ok()) pt.emplace(pid, std::move(*started));
        st = started.status();
      }
      if (!st.ok()) {
        lbr.clear();
        pt.clear();
        return Status(st.code(), std::string(collectors::BranchSourceName(source)) +
                                     " could not start on pid " + std::to_string(pid) + ": " +
                                     st.message());
      }
    }
    return Status::Ok();
  }

  void PollLive() {
    for (auto& [pid, source] : lbr) source->Poll();
    for (auto& [pid, source] : pt) source->Poll();
  }

  // Drains the rings often enough that a busy target does not overrun them between polls.
  void LiveLoop() {
    while (!live_stop.load()) {
      PollLive();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void DrainSampler() {
    if (sampler) sampler->Flush();
  }

  // Stops the collectors, applies what is queued, records the end. Called once, from the control
  // thread or from Stop().
  void TearDown(SessionState final_state) {
    std::map<uint32_t, stepping::PtraceBurstStats> final;
    for (auto& [pid, collector] : bursts) collector->RequestStop();  // they detach in parallel
    for (auto& [pid, collector] : bursts) final[pid] = collector->Stop();
    live_stop.store(true);
    if (live.joinable()) live.join();
    for (auto& [pid, source] : lbr) source->Poll();
    for (auto& [pid, source] : pt) source->Flush();
    DrainSampler();
    AccountCollectors(&final);
    if (const uint64_t late = windows_after_revocation.load(); late > 0)
      if (std::shared_ptr<ProfileStore> first = FirstStore())
        first->accounting().drops.Add("window_after_privilege_gain", late);
    sampler.reset();
    lbr.clear();
    pt.clear();
    ingestor->Flush();
    ingestor->Close();
    // The ingest threads are gone: every evicted store can be settled now.
    if (std::shared_ptr<ProfileStore> first = FirstStore()) SettleRetired(*first);
    std::lock_guard<std::mutex> lock(mu);
    torn_down = true;
    if (info.state == SessionState::kRunning) info.state = final_state;
    info.stopped_unix_ms = UnixMs();
    ended_cv.notify_all();
  }

  void ControlLoop() {
    const auto start = std::chrono::steady_clock::now();
    auto last_liveness = start;
    for (;;) {
      if (stop_requested.load()) return;  // Stop() tears down
      // The host sampler's reader hands stacks to the ingestor on its own thread.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (revoked.load()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          info.error = revoked_reason;
        }
        TearDown(SessionState::kStopped);
        return;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - last_liveness < std::chrono::milliseconds(100)) continue;
      last_liveness = now;
      CheckEveryConfinement();
      AccountCollectors();
      // A tracer that died (killed, or failed) leaves the session without branches: say so.
      for (auto& [pid, collector] : bursts) {
        if (!collector->finished() || collector->failure().empty() || !ProcessAlive(pid)) continue;
        {
          std::lock_guard<std::mutex> lock(mu);
          info.error =
              "the ptrace tracer of pid " + std::to_string(pid) + " ended: " + collector->failure();
        }
        TearDown(SessionState::kFailed);
        return;
      }
      NoteDescendantExits();
      bool any_alive = config.every_process;  // runs until stopped
      for (uint32_t pid : config.pids) {
        if (ProcessAlive(pid)) {
          any_alive = true;
        } else if (std::shared_ptr<ProfileStore> store = Lookup(pid)) {
          store->NoteExit();
          if (sampler) (void)sampler->RemovePid(pid);
        }
      }
      if (!any_alive) {
        TearDown(SessionState::kTargetExited);
        return;
      }
      if (config.duration_s > 0 && now - start >= std::chrono::seconds(config.duration_s)) {
        TearDown(SessionState::kStopped);
        return;
      }
    }
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  Stop();
}

Result<std::unique_ptr<Session>> Session::Start(std::string id, SessionConfig config,
                                                const collectors::HostCapabilities& caps,
                                                std::shared_ptr<SymbolService> symbols) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  // What the host cannot do is said before anything about the targets.
  std::string reason;
  PATHPROF_ASSIGN_OR_RETURN(auto chosen, ChooseBranchSource(config.source, caps, &reason));
  for (uint32_t pid : config.pids) {
    if (!ProcessAlive(pid))
      return Status(ErrorCode::kNotFound, "process " + std::to_string(pid) +
                                              " does not exist (or has exited); check the pid");
  }
  if (symbols == nullptr) symbols = std::make_shared<SymbolService>();
  auto impl = std::make_unique<Impl>();
  Impl* s = impl.get();
  s->id = std::move(id);
  s->config = config;
  s->symbols = symbols;
  s->info.id = s->id;
  s->info.pids = config.pids;
  s->info.owner_uid = config.owner_uid;
  s->info.config = config;
  s->info.started_unix_ms = UnixMs();
  if (config.confine_to_uid) {
    for (uint32_t pid : config.pids) {
      PATHPROF_ASSIGN_OR_RETURN(auto creds, ReadTargetCredentials(pid));
      Confinement who{*config.confine_to_uid, {}};
      for (uint32_t g : creds.gids)
        if (std::find(who.gids.begin(), who.gids.end(), g) == who.gids.end()) who.gids.push_back(g);
      // The group ids a target starts with are its own (a user's process may run with any of
      // their groups); its user ids, capabilities and dumpability must be plainly the user's.
      const std::string gain = PrivilegeGain(creds, who);
      if (!gain.empty())
        return Status(ErrorCode::kPermission, "pid " + std::to_string(pid) +
                                                  " holds privileges you (uid " +
                                                  std::to_string(who.uid) + ") do not: " + gain);
      s->confinement.emplace(pid, std::move(who));
    }
  }

  collectors::BranchSource source = chosen;
  if (source == collectors::BranchSource::kLbr || source == collectors::BranchSource::kIntelPt) {
    // The sinks reach the ingestor only once the live thread polls, after it exists.
    const Status st = s->StartLiveSources(source);
    if (!st.ok()) {
      if (config.source != SourceChoice::kAuto) return st;
      if (caps.ptrace.available) {
        source = collectors::BranchSource::kPtraceBursts;
        reason = "auto (" + st.message() + ")";
      } else {
        source = collectors::BranchSource::kNone;
        reason = "auto (" + st.message() + "; ptrace unavailable: " + caps.ptrace.detail + ")";
      }
    }
  }
  const BranchWindows windows =
      source == collectors::BranchSource::kPtraceBursts ? BranchWindows::kTime
      : source == collectors::BranchSource::kLbr        ? BranchWindows::kTakenBranches
                                                        : BranchWindows::kNone;
  for (uint32_t pid : config.pids) {
    PATHPROF_ASSIGN_OR_RETURN(auto store, ProfileStore::Create(pid, config, windows, symbols));
    s->stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(store)));
  }
  s->ingestor =
      std::make_unique<Ingestor>(config.queues, [s](uint32_t pid) { return s->Lookup(pid); });

  if (config.sampling.stack_hz > 0) {
    collectors::StackSubscriptionSettings ss;
    ss.frequency_hz = static_cast<int>(config.sampling.stack_hz);
    ss.pids = config.pids;
    ss.kernel_stacks = config.sampling.kernel_stacks;
    // A task whose credentials are not plainly the requester's never reaches this session.
    ss.only_uid = config.confine_to_uid;
    ss.stack_copy_bytes =
        config.sampling.call_graph == CallGraph::kDwarf ? config.sampling.stack_copy_bytes : 0;
    ss.follow_children = config.follow_children;
    auto sampler = collectors::StackSubscription::Start(
        ss, [s](const collectors::RawStackSample& sample) { s->ingestor->OfferStack(sample); });
    if (sampler.ok()) {
      s->sampler = std::move(*sampler);
      // Children forked before the fork tracepoint was attached (a command that started
      // before profiling did): found once in /proc, after the tracepoint, so none is missed.
      if (config.follow_children)
        for (uint32_t pid : Descendants(config.pids)) (void)s->sampler->AddPid(pid);
      s->info.stacks = true;
      s->info.stacks_reason = "eBPF stack sampler on " + s->sampler->stats().event + " at " +
                              std::to_string(config.sampling.stack_hz) + " Hz";
    } else {
      s->info.stacks_reason = "eBPF stacks unavailable: " + sampler.status().message();
    }
  } else {
    s->info.stacks_reason = "stack sampling off (stack_hz = 0)";
  }

  if (source == collectors::BranchSource::kPtraceBursts) {
    for (uint32_t pid : config.pids) {
      stepping::PtraceBurstOptions po;
      po.pid = static_cast<pid_t>(pid);
      po.window_taken = config.sampling.window_branches;
      po.bursts_per_second = config.sampling.bursts_per_second;
      po.max_stopped_fraction = config.sampling.max_stopped_fraction;
      po.step_mode = config.sampling.step_mode;
      if (auto it = s->confinement.find(pid); it != s->confinement.end()) {
        // The tracer runs as the requester, without capabilities: the kernel then refuses a
        // setuid elevation under it, and applies Yama's ptrace scope, as for the user's own tools.
        po.run_as = stepping::TracerCredentials{it->second.uid, it->second.gids.front()};
      }
      stepping::PtraceBurstSink sink;
      sink.on_window = [s](const BranchBatch& b) {
        if (s->revoked.load()) {
          s->windows_after_revocation.fetch_add(1);
          return;
        }
        s->ingestor->OfferBranches(b);
      };
      sink.on_exec = [s, pid] {
        s->CheckConfinement(pid);
        if (std::shared_ptr<ProfileStore> store = s->Lookup(pid)) store->NoteExec();
      };
      auto collector = stepping::PtraceBurstCollector::Start(po, std::move(sink));
      if (!collector.ok()) {
        if (config.source == SourceChoice::kPtrace) {
          s->bursts.clear();
          s->ingestor->Close();
          return collector.status();
        }
        reason += "; ptrace bursts failed for pid " + std::to_string(pid) + ": " +
                  collector.status().message();
        continue;
      }
      s->bursts.emplace(pid, std::move(*collector));
    }
    if (s->bursts.empty()) {
      source = collectors::BranchSource::kNone;
    } else {
      reason += "; step mode " +
                StepModeReport(config.sampling.step_mode, s->bursts.begin()->second->step_mode());
    }
  }
  s->info.source = source;
  s->info.source_reason = reason;
  if (!s->sampler && s->bursts.empty() && s->lbr.empty() && s->pt.empty()) {
    s->ingestor->Close();
    return Status(ErrorCode::kUnavailable,
                  "nothing to collect: " + s->info.stacks_reason + "; branches: " + reason);
  }
  if (!s->lbr.empty() || !s->pt.empty()) s->live = std::thread([s] { s->LiveLoop(); });
  s->control = std::thread([s] { s->ControlLoop(); });
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::FromRecording(
    std::string id, SessionConfig config, std::shared_ptr<SymbolService> symbols,
    std::map<uint32_t, std::unique_ptr<ProfileStore>> stores, std::string source_reason) {
  auto impl = std::make_unique<Impl>();
  impl->id = std::move(id);
  impl->config = std::move(config);
  impl->symbols = symbols ? std::move(symbols) : std::make_shared<SymbolService>();
  impl->info.id = impl->id;
  for (auto& [pid, store] : stores) {
    impl->info.pids.push_back(pid);
    impl->stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(store)));
  }
  impl->config.pids = impl->info.pids;
  impl->info.owner_uid = impl->config.owner_uid;
  impl->info.config = impl->config;
  impl->info.state = SessionState::kStopped;
  impl->info.source_reason = std::move(source_reason);
  impl->info.stacks_reason = "a recording: no live collection";
  impl->info.started_unix_ms = UnixMs();
  impl->info.stopped_unix_ms = impl->info.started_unix_ms;
  // Nothing to stop: Stop() and WaitEnded() see a session that has ended.
  impl->torn_down = true;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::string& Session::id() const {
  return impl_->id;
}

SessionInfo Session::Info() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->info;
}

void Session::Stop() {
  if (!impl_) return;
  impl_->stop_requested.store(true);
  if (impl_->control.joinable()) impl_->control.join();
  bool torn;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    torn = impl_->torn_down;
  }
  if (!torn) impl_->TearDown(SessionState::kStopped);
}

void Session::NoteExec(uint32_t pid, uint64_t exec_monotonic_ns) {
  if (std::shared_ptr<ProfileStore> store = impl_->Lookup(pid)) store->NoteExec(exec_monotonic_ns);
}

void Session::HoldUntilExec(uint32_t pid) {
  if (std::shared_ptr<ProfileStore> store = impl_->Lookup(pid)) store->HoldUntilExec();
}

void Session::RecheckConfinement() {
  if (!impl_ || impl_->confinement.empty()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->torn_down) return;
  }
  impl_->CheckEveryConfinement();
}

bool Session::WaitEnded(int timeout_ms) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->ended_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                  [&] { return impl_->torn_down; });
}

bool Session::Expired(int64_t now_unix_ms) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->torn_down) return false;
  return now_unix_ms - impl_->info.stopped_unix_ms >= int64_t(impl_->config.retention_s) * 1000;
}

std::vector<std::shared_ptr<const ProfileStore>> Session::Stores() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::shared_ptr<const ProfileStore>> out;
  for (const auto& [pid, store] : impl_->stores) out.push_back(store);
  return out;
}

std::shared_ptr<const ProfileStore> Session::Store(uint32_t pid) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->stores.find(pid);
  return it == impl_->stores.end() ? nullptr : it->second;
}

HotPathsResult Session::HotPaths(const HotPathsQuery& query) const {
  HotPathsResult out;
  for (const auto& store : Stores()) {
    HotPathsResult r = store->HotPaths(query);
    out.total += r.total;
    out.paths_distinct += r.paths_distinct;
    out.as_of_unix_ms = std::max(out.as_of_unix_ms, r.as_of_unix_ms);
    if (out.estimator == PathEstimator::kNone) out.estimator = r.estimator;
    out.contexts_matched += r.contexts_matched;
    out.context_windows += r.context_windows;
    for (HotPath& p : r.paths) out.paths.push_back(std::move(p));
  }
  std::stable_sort(out.paths.begin(), out.paths.end(), [](const HotPath& a, const HotPath& b) {
    return a.estimate.value > b.estimate.value;
  });
  if (out.paths.size() > query.top_k) out.paths.resize(query.top_k);
  for (HotPath& p : out.paths) p.estimate.share = out.total > 0 ? p.estimate.value / out.total : 0;
  return out;
}

namespace {
// A process's share scaled to the session's basis: every process's total together, so that a
// table over several processes has one basis (its shares sum to at most 1), as its tree has.
double Rebased(double share, double process_basis, double session_basis) {
  return session_basis > 0 ? share * process_basis / session_basis : 0;
}
}  // namespace

HotSubpathsResult Session::HotSubpaths(const HotSubpathsQuery& query) const {
  HotSubpathsResult out;
  std::vector<HotSubpathsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotSubpaths(query));
    out.share_basis += per_process.back().share_basis;
  }
  for (HotSubpathsResult& r : per_process) {
    out.sampling_frequency = std::max(out.sampling_frequency, r.sampling_frequency);
    for (Subpath& p : r.subpaths) {
      p.estimate.share = Rebased(p.estimate.share, r.share_basis, out.share_basis);
      out.subpaths.push_back(std::move(p));
    }
  }
  std::stable_sort(
      out.subpaths.begin(), out.subpaths.end(),
      [](const Subpath& a, const Subpath& b) { return a.estimate.value > b.estimate.value; });
  if (query.threshold <= 0 && out.subpaths.size() > query.top_k) out.subpaths.resize(query.top_k);
  return out;
}

CallingContextTree Session::Cct(const CctQuery& query) const {
  CallingContextTree out;
  uint64_t base = 0;
  for (const auto& store : Stores()) {
    CallingContextTree t = store->Cct(query);
    out.total_weight += t.total_weight;
    out.samples += t.samples;
    uint64_t max_id = 0;
    for (CctNode& n : t.nodes) {
      max_id = std::max(max_id, n.id);
      n.id += base;
      if (n.parent_id != 0) n.parent_id += base;
      out.nodes.push_back(std::move(n));
    }
    base += max_id;
  }
  return out;
}

HotCallPairsResult Session::HotCallPairs(uint32_t top_k) const {
  HotCallPairsResult out;
  std::vector<HotCallPairsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotCallPairs(top_k));
    out.total += per_process.back().total;
  }
  for (HotCallPairsResult& r : per_process)
    for (CallPair& p : r.pairs) {
      p.estimate.share = Rebased(p.estimate.share, r.total, out.total);
      out.pairs.push_back(std::move(p));
    }
  std::stable_sort(out.pairs.begin(), out.pairs.end(), [](const CallPair& a, const CallPair& b) {
    return a.estimate.value > b.estimate.value;
  });
  if (out.pairs.size() > top_k) out.pairs.resize(top_k);
  return out;
}

HotMethodsResult Session::HotMethods(uint32_t top_k) const {
  HotMethodsResult out;
  std::vector<HotMethodsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotMethods(top_k));
    out.self_total += per_process.back().self_total;
    out.entries_total += per_process.back().entries_total;
  }
  for (HotMethodsResult& r : per_process) {
    out.hot_data_streams_unsupported = r.hot_data_streams_unsupported;
    for (HotMethod& m : r.methods) {
      m.self.share = Rebased(m.self.share, r.self_total, out.self_total);
      m.entries.share = Rebased(m.entries.share, r.entries_total, out.entries_total);
      out.methods.push_back(std::move(m));
    }
  }
  std::stable_sort(out.methods.begin(), out.methods.end(),
                   [](const HotMethod& a, const HotMethod& b) {
                     return a.self.value != b.self.value ? a.self.value > b.self.value
                                                         : a.entries.value > b.entries.value;
                   });
  if (out.methods.size() > top_k) out.methods.resize(top_k);
  return out;
}

std::vector<TargetStats> Session::Stats() const {
  std::vector<TargetStats> out;
  for (const auto& store : Stores()) out.push_back(store->Stats());
  return out;
}

Result<uint64_t> Session::SaveBaseline(const std::string& name) {
  if (name.empty()) return Status(ErrorCode::kInvalidArgument, "baseline name is empty");
  std::set<PathKey> keys;
  for (const auto& store : Stores())
    for (const PathKey& k : store->PathKeys()) keys.insert(k);
  const uint64_t n = keys.size();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->baselines[name] = std::move(keys);
  return n;
}

Result<ResidualPathsResult> Session::ResidualPaths(const std::string& baseline,
                                                   uint32_t top_k) const {
  std::set<PathKey> base;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->baselines.find(baseline);
    if (it == impl_->baselines.end())
      return Status(ErrorCode::kNotFound, "no baseline named '" + baseline + "' in session " +
                                              impl_->id + "; save one first");
    base = it->second;
  }
  ResidualPathsResult out;
  HotPathsQuery q;
  q.top_k = UINT32_MAX;
  q.with_blocks = false;
  for (HotPath& p : HotPaths(q).paths) {
    const PathKey key{p.pid, p.start.address, p.length, p.outcomes};
    if (base.contains(key)) {
      ++out.known;
    } else if (out.residual.size() < top_k) {
      out.residual.push_back(std::move(p));
    }
  }
  return out;
}

Result<std::string> Session::ExportPprof(bool include_paths, bool kernel_addresses) const {
  namespace pp = profiles::pprof;
  pp::ProfileOptions options;
  options.sample_types = {{"samples", "count"}};
  if (include_paths) options.sample_types.push_back({"path_count", "count"});
  options.period_type = {"cpu", "nanoseconds"};
  const uint32_t hz = std::max(1u, impl_->config.sampling.stack_hz);
  options.period = 1000000000LL / hz;
  options.time_nanos = impl_->info.started_unix_ms * 1000000LL;
  options.default_sample_type = "samples";
  PATHPROF_ASSIGN_OR_RETURN(auto builder, pp::ProfileBuilder::Create(options));
  auto to_pprof = [](const Location& l) {
    pp::Location out;
    out.address = l.address;
    out.mapping.file = l.image;
    out.mapping.build_id = l.build_id;
    out.mapping.start = l.map_start;
    out.mapping.limit = l.map_limit;
    out.mapping.offset = l.map_offset;
    // Code without a symbol (a PLT entry, _start, main, or one function per unwind entry,
    // image+0xSTART) is named so in every view; its system name adds the function's size (the
    // name has its start), and the mapping is not marked symbolized by it
    // (pp::Frame::name_from_address), so a backend with the unstripped file still names it.
    if (l.name_without_symbol) {
      char size[48];
      std::snprintf(size, sizeof size, " (0x%llx bytes)",
                    static_cast<unsigned long long>(l.function_size));
      out.frames.push_back({l.function, l.function + size, l.file, l.line, 0, true});
      return out;
    }
    if (l.inlined_by.empty()) {
      if (!l.function.empty()) out.frames.push_back({l.function, "", l.file, l.line, 0});
    } else {
      for (const Location& f : l.inlined_by)
        out.frames.push_back({f.function, "", f.file, f.line, 0});
    }
    return out;
  };
  CctQuery q;
  q.max_depth = 4096;
  q.max_nodes = 1000000;
  CallingContextTree tree = Cct(q);
  if (!kernel_addresses) HideKernelFrames(&tree);
  std::map<uint64_t, const CctNode*> by_id;
  for (const CctNode& n : tree.nodes) by_id[n.id] = &n;
  // A leaf's samples are spread over the addresses they were taken at, in proportion to its
  // function's sampled addresses (the PCCT keeps functions, not addresses: per line the totals
  // are exact, per context a share), so pprof's line view matches perf annotate's.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<std::pair<Location, uint64_t>>> leaves_of;
  auto leaves = [&](const CctNode& n) -> const std::vector<std::pair<Location, uint64_t>>& {
    const auto key = std::make_pair(n.pid, n.function.address);
    auto it = leaves_of.find(key);
    if (it != leaves_of.end()) return it->second;
    std::vector<std::pair<Location, uint64_t>> found;
    if (n.function.address != 0 && !decoders::IsKernelAddress(n.function.address))
      if (auto store = Store(n.pid)) found = store->LeafAddresses(n.function.address);
    return leaves_of.emplace(key, std::move(found)).first->second;
  };
  for (const CctNode& n : tree.nodes) {
    if (n.self_weight <= 0) continue;
    // Each caller's location is where it made the call (its child's call site: own address,
    // own line), so pprof and Parca spread a caller's samples over its call lines; a frame
    // without a known call site (a hidden kernel frame) stands at its function.
    std::vector<pp::Location> callers;
    const Location* site = &n.call_site;
    for (auto it = by_id.find(n.parent_id); it != by_id.end();
         it = by_id.find(it->second->parent_id)) {
      const CctNode* c = it->second;
      callers.push_back(to_pprof(site->address != 0 ? *site : c->function));
      site = &c->call_site;
    }
    const int64_t self = int64_t(n.self_weight);
    std::vector<std::pair<pp::Location, int64_t>> split;
    const auto& at = leaves(n);
    uint64_t seen = 0;
    for (const auto& [loc, count] : at) seen += count;
    if (seen == 0) {
      split.emplace_back(to_pprof(n.function), self);
    } else {
      // Largest remainder: the parts add up to the node's own count exactly.
      std::vector<std::pair<uint64_t, size_t>> remainders;
      int64_t given = 0;
      for (size_t i = 0; i < at.size(); ++i) {
        const unsigned __int128 scaled = (unsigned __int128)at[i].second * uint64_t(self);
        split.emplace_back(to_pprof(at[i].first), int64_t(scaled / seen));
        given += split.back().second;
        remainders.emplace_back(uint64_t(scaled % seen), i);
      }
      std::sort(remainders.rbegin(), remainders.rend());
      for (size_t k = 0; given < self && k < remainders.size(); ++k, ++given)
        ++split[remainders[k].second].second;
    }
    for (auto& [leaf, value] : split) {
      if (value <= 0) continue;
      pp::Sample sample;
      sample.stack.push_back(std::move(leaf));
      sample.stack.insert(sample.stack.end(), callers.begin(), callers.end());
      sample.values = {value};
      if (include_paths) sample.values.push_back(0);
      sample.num_labels.push_back({"pid", int64_t(n.pid), ""});
      PATHPROF_RETURN_IF_ERROR(builder.AddSample(sample));
    }
  }
  if (include_paths) {
    HotPathsQuery hq;
    hq.top_k = 1000;
    hq.with_blocks = false;
    HotPathsResult paths = HotPaths(hq);
    if (!kernel_addresses) HideKernelFrames(&paths);
    for (const HotPath& p : paths.paths) {
      pp::Sample sample;
      sample.stack.push_back(to_pprof(p.start));
      sample.values = {0, int64_t(p.estimate.value + 0.5)};
      sample.num_labels.push_back({"pid", int64_t(p.pid), ""});
      sample.num_labels.push_back({"path_length", int64_t(p.length), ""});
      sample.num_labels.push_back({"path_outcomes", int64_t(p.outcomes), ""});
      PATHPROF_RETURN_IF_ERROR(builder.AddSample(sample));
    }
  }
  return builder.SerializeGzip();
}

}  // namespace pathprof::pipeline
