// Session while it runs: what the sources hand on, their losses into the accounting, the poll
// and control threads, and the teardown.
#include <chrono>
#include <thread>
#include <utility>

#include "pathprof/core/clock.h"
#include "process_tree.h"
#include "session_impl.h"

namespace pathprof::pipeline {
namespace {

// What grew in `now` since `seen`, added to `into` by reason (a reason that did not grow adds
// nothing, not even a zero).
void AddGrowth(const std::map<std::string, uint64_t>& now, std::map<std::string, uint64_t>& seen,
               ReasonCounters& into) {
  for (const auto& [reason, n] : now)
    if (n > seen[reason]) into.Add(reason, n - seen[reason]);
}

}  // namespace

void Session::Impl::OfferBranches(const BranchBatch& batch) {
  // A revoked session collects nothing more; what still arrives is counted at teardown.
  if (revoked.load()) {
    windows_after_revocation.fetch_add(1);
    return;
  }
  ingestor->OfferBranches(batch);
}

void Session::Impl::OfferStack(const collectors::RawStackSample& sample) {
  ingestor->OfferStack(sample);
}

void Session::Impl::NoteExec(uint32_t pid) {
  CheckConfinement(pid);
  if (std::shared_ptr<ProfileStore> store = Lookup(pid)) store->NoteExec();
}

void Session::Impl::WindowsFrom(uint32_t pid, BranchWindows windows, const std::string& why) {
  // A process without a store (a followed child takes stacks alone) takes no windows either.
  std::shared_ptr<ProfileStore> store = Lookup(pid);
  if (store == nullptr) return;
  if (const Status st = store->UseWindows(windows, why); !st.ok())
    store->accounting().drops.Add("windows_reweigh_failed");
}

void Session::Impl::AccountSources() {
  // The session's losses (its targets' share of the host's ring, its bounds) go to the first
  // store; losses before it exists are told to it once it does.
  std::shared_ptr<ProfileStore> first = FirstStore();
  if (first != nullptr) {
    uint64_t over_limit = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      over_limit = std::exchange(descendants_over_limit, 0);
    }
    if (over_limit > 0)
      first->accounting().drops.Add(config.every_process ? "process_limit" : "descendant_limit",
                                    over_limit);
    SettleRetired(*first);
  }
  for (Running& r : sources) {
    for (const auto& [pid, now] : r.source->Counters()) {
      std::shared_ptr<ProfileStore> store = pid == kSessionLosses ? first : Lookup(pid);
      if (store == nullptr) continue;  // kept in `seen` until the store exists
      SourceLosses& seen = r.seen[pid];
      AddGrowth(now.drops, seen.drops, store->accounting().drops);
      AddGrowth(now.decode_errors, seen.decode_errors, store->accounting().decode_errors);
      AddGrowth(now.held_back, seen.held_back, store->accounting().windows_held_back);
      AddGrowth(now.windows_by_source, seen.windows_by_source,
                store->accounting().windows_by_source);
      seen = now;
    }
  }
}

void Session::Impl::PollLoop() {
  while (!poll_stop.load()) {
    for (Running& r : sources)
      if (r.source->NeedsPolling()) r.source->Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Session::Impl::TearDown(SessionState final_state) {
  for (Running& r : sources) r.source->RequestStop();  // they stop in parallel
  poll_stop.store(true);
  if (poller.joinable()) poller.join();
  for (Running& r : sources) r.source->Stop();
  AccountSources();
  if (const uint64_t late = windows_after_revocation.load(); late > 0)
    if (std::shared_ptr<ProfileStore> first = FirstStore())
      first->accounting().drops.Add("window_after_privilege_gain", late);
  sources.clear();
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

void Session::Impl::ControlLoop() {
  const auto start = std::chrono::steady_clock::now();
  auto last_liveness = start;
  for (;;) {
    if (stop_requested.load()) return;  // Stop() tears down
    // The sources hand their data on from their own threads (and the poll thread).
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
    AccountSources();
    // A source that ended on its own (a tracer killed) leaves the session without its data.
    for (const Running& r : sources) {
      std::string failure = r.source->Failure();
      if (failure.empty()) continue;
      {
        std::lock_guard<std::mutex> lock(mu);
        info.error = std::move(failure);
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
        NoteProcessGone(pid);
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

}  // namespace pathprof::pipeline
