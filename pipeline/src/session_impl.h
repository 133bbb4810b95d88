// Session's state, private to pipeline/src. The session is one class written in several files,
// one job each: session.cc (starting and stopping, the lifecycle), session_run.cc (the control
// and poll threads, the sources' losses into the accounting, teardown), session_membership.cc
// (which processes have a store, confinement), session_queries.cc (answers merged over the
// stores) and session_pprof.cc (the pprof export). Sources are known only through LiveSource and
// the table (source_table.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pathprof/pipeline/ingestor.h"
#include "pathprof/pipeline/live_source.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/source_table.h"
#include "target_credentials.h"

namespace pathprof::pipeline {

struct Session::Impl final : SourceSink {
  Impl(std::string session_id, SessionConfig session_config,
       std::shared_ptr<SymbolService> symbol_service);

  std::string id;
  SessionConfig config;
  std::shared_ptr<SymbolService> symbols;

  mutable std::mutex mu;
  std::condition_variable ended_cv;
  SessionInfo info;
  // Shrinks only in whole-host mode, where the coldest store leaves for a hotter newcomer:
  // callers hold a store through its shared_ptr.
  std::map<uint32_t, std::shared_ptr<ProfileStore>> stores;
  BranchWindows stores_windows = BranchWindows::kNone;  // how `stores` weight branch windows
  // Whole-host mode: the branches all its stores keep for exports, export_branch_events in all
  // (each store given it as it joins: ProfileStore::ShareExportBuffer); null otherwise. The
  // continuous window's archive takes that many across its processes (BranchesForArchive); kept per
  // process instead, 50 busy processes held up to 50 times that (the daemon's RSS grew ~1.2 MB a
  // second through a 60 s window; docs/performance.md).
  std::shared_ptr<SharedExportBuffer> export_shared;
  uint32_t descendants = 0;             // stores made for followed children (or any process)
  std::set<uint32_t> live_descendants;  // ... whose exit was not noted yet
  uint32_t zombie_check_after = 0;      // the last of them whose stat was read (the poll's)
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
  // The sources running, each with its losses as last added to the accounting (for deltas).
  // Declared after the ingestor: they go first, and their sinks reach it until they do.
  struct Running {
    std::unique_ptr<LiveSource> source;
    SourceCounters seen;
  };
  std::vector<Running> sources;
  std::thread poller;  // drains the sources that need polling
  std::atomic<bool> poll_stop{false};

  std::thread control;
  std::atomic<bool> stop_requested{false};
  bool torn_down = false;

  // A non-admin's session: what each target may hold (config.confine_to_uid). Once a target
  // holds more, `revoked` is set: nothing more is collected, what was is kept.
  std::map<uint32_t, Confinement> confinement;
  std::atomic<bool> revoked{false};
  std::string revoked_reason;  // under mu
  std::atomic<uint64_t> windows_after_revocation{0};

  // ------------------------------------------------ SourceSink: what the sources hand on
  void OfferBranches(const BranchBatch& batch) override;
  void OfferStack(const collectors::RawStackSample& sample) override;
  void NoteExec(uint32_t pid) override;
  void WindowsFrom(uint32_t pid, BranchWindows windows, const std::string& why) override;
  bool Takes(uint32_t pid) override { return Lookup(pid) != nullptr; }

  // ------------------------------------------------ starting (session.cc)
  // A confined session: each target's credentials, refused when it holds more than its
  // requester.
  Status ConfineTargets();
  // Stores for every target, their windows weighted as `windows` say: made at the first call,
  // re-weighted in place at a later one (a branch source's fallback).
  Status SetWindows(BranchWindows windows);
  SourceTargets Targets(bool all_or_nothing) const;
  // The branch source `kind` from `table`, and under auto its fallbacks while one fails; says
  // which runs, and why, in info.
  Status StartBranchSource(const SourceTable& table, collectors::BranchSource kind,
                           const collectors::HostCapabilities& caps, std::string reason);
  void StartStackSource(const SourceTable& table);
  void StartThreads();

  // ------------------------------------------------ running (session_run.cc)
  // The sources' losses since the last call -> their processes' accounting, by reason.
  void AccountSources();
  // Drains the rings often enough that a busy target does not overrun them between polls.
  void PollLoop();
  // Stops the sources, applies what is queued, records the end. Called once, from the control
  // thread or from Stop().
  void TearDown(SessionState final_state);
  void ControlLoop();

  // ------------------------------------------------ membership (session_membership.cc)
  // Reads the target's credentials now; on a gain, revokes the session (the control loop then
  // stops the collectors). Safe from any thread, including a collector's callback.
  void CheckConfinement(uint32_t pid);
  void CheckEveryConfinement();
  std::shared_ptr<ProfileStore> Lookup(uint32_t pid);
  bool JoinsLocked(uint32_t pid);
  bool EvictColderThanLocked(uint32_t pid);
  void SettleRetired(ProfileStore& first);
  std::shared_ptr<ProfileStore> FirstStore();
  void NoteDescendantExits();
  // A process left the session: every source lets it go.
  void NoteProcessGone(uint32_t pid);
};

}  // namespace pathprof::pipeline
