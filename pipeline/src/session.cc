// Session: starting one (its stores, the sources the table names, its threads), stopping it, and
// its lifecycle. The sources are known only through LiveSource and the table (source_table.h).
#include "pathprof/pipeline/session.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "pathprof/core/clock.h"
#include "process_tree.h"
#include "session_impl.h"

namespace pathprof::pipeline {
namespace {

Status CheckTargetsExist(const std::vector<uint32_t>& pids) {
  for (uint32_t pid : pids) {
    if (!ProcessAlive(pid))
      return Status(ErrorCode::kNotFound, "process " + std::to_string(pid) +
                                              " does not exist (or has exited); check the pid");
  }
  return Status::Ok();
}

}  // namespace

std::string_view SessionStateName(SessionState s) {
  return WordOf(kSessionStateWords, s);
}

Session::Impl::Impl(std::string session_id, SessionConfig session_config,
                    std::shared_ptr<SymbolService> symbol_service)
    : id(std::move(session_id)),
      config(std::move(session_config)),
      symbols(symbol_service ? std::move(symbol_service) : std::make_shared<SymbolService>()),
      export_shared(config.every_process && config.export_branch_events > 0
                        ? std::make_shared<SharedExportBuffer>(config.export_branch_events)
                        : nullptr) {
  info.id = id;
  info.pids = config.pids;
  info.owner_uid = config.owner_uid;
  info.config = config;
  info.started_unix_ms = UnixMs();
}

Status Session::Impl::ConfineTargets() {
  if (!config.confine_to_uid) return Status::Ok();
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
    confinement.emplace(pid, std::move(who));
  }
  return Status::Ok();
}

Status Session::Impl::SetWindows(BranchWindows windows) {
  std::lock_guard<std::mutex> lock(mu);
  // The session's own targets only: a process that joined (a followed child) gets stacks alone.
  for (uint32_t pid : config.pids) {
    auto it = stores.find(pid);
    if (it == stores.end()) {
      PATHPROF_ASSIGN_OR_RETURN(auto store, ProfileStore::Create(pid, config, windows, symbols));
      stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(store)));
    } else if (windows != stores_windows) {
      PATHPROF_RETURN_IF_ERROR(it->second->ResetWindows(windows));
    }
  }
  stores_windows = windows;
  return Status::Ok();
}

SourceTargets Session::Impl::Targets(bool all_or_nothing) const {
  SourceTargets targets{config, {}, all_or_nothing};
  for (const auto& [pid, who] : confinement) targets.run_as[pid] = RunAs{who.uid, who.gids.front()};
  if (config.tracer_as_target && !config.confine_to_uid) {
    targets.run_as_preferred = true;
    for (uint32_t pid : config.pids) {
      auto creds = ReadTargetCredentials(pid);
      if (!creds.ok() || creds->uids[0] == 0) continue;  // root's own process: root's tracer
      // A plain user's process: nothing beyond its real uid and gid.
      if (!PrivilegeGain(*creds, Confinement{creds->uids[0], {creds->gids[0]}}).empty()) continue;
      targets.run_as[pid] = RunAs{creds->uids[0], creds->gids[0]};
    }
  }
  return targets;
}

Status Session::Impl::StartBranchSource(const SourceTable& table, collectors::BranchSource kind,
                                        const collectors::HostCapabilities& caps,
                                        std::string reason) {
  const bool asked_for = config.source != SourceChoice::kAuto;
  std::string failures;  // of the sources tried, under auto
  // A fallback loop in the table ends at none once every row has had its try.
  for (size_t tries = 1;; ++tries) {
    const BranchSourceRow* row = table.Find(kind);
    // No window has reached the stores yet: a fallback's windows are weighted as its own (the
    // stack samples that arrived meanwhile stay).
    PATHPROF_RETURN_IF_ERROR(SetWindows(row ? row->windows : BranchWindows::kNone));
    if (row == nullptr) break;  // none: stacks only
    std::unique_ptr<LiveSource> source = row->make();
    const Status st = source->Start(Targets(asked_for), *this);
    if (st.ok()) {
      if (const std::string detail = source->Detail(); !detail.empty()) reason += "; " + detail;
      sources.push_back({std::move(source), {}});
      break;
    }
    if (asked_for) return st;
    failures += (failures.empty() ? "" : "; ") + st.message();
    kind = tries < table.branches.size() ? row->fallback : collectors::BranchSource::kNone;
    const BranchSourceRow* next = table.Find(kind);
    if (next != nullptr && next->needs != nullptr && !(caps.*next->needs).available) {
      reason = "auto (" + failures + "; " + std::string(next->label) +
               " unavailable: " + (caps.*next->needs).detail + ")";
      kind = collectors::BranchSource::kNone;
    } else {
      reason = "auto (" + failures + ")";
    }
  }
  info.source = sources.empty() ? collectors::BranchSource::kNone : kind;
  info.source_reason = std::move(reason);
  return Status::Ok();
}

void Session::Impl::StartStackSource(const SourceTable& table) {
  if (config.sampling.stack_hz == 0) {
    info.stacks_reason = "stack sampling off (stack_hz = 0)";
    return;
  }
  if (!table.stacks) {
    info.stacks_reason = "no stack source in this session's table";
    return;
  }
  std::unique_ptr<LiveSource> source = table.stacks();
  if (const Status st = source->Start(Targets(true), *this); !st.ok()) {
    info.stacks_reason = st.message();
    return;
  }
  info.stacks = true;
  info.stacks_reason = source->Detail();
  sources.push_back({std::move(source), {}});
}

void Session::Impl::StartThreads() {
  if (std::any_of(sources.begin(), sources.end(),
                  [](const Running& r) { return r.source->NeedsPolling(); }))
    poller = std::thread([this] { PollLoop(); });
  control = std::thread([this] { ControlLoop(); });
}

Result<std::unique_ptr<Session>> Session::Start(std::string id, SessionConfig config,
                                                const collectors::HostCapabilities& caps,
                                                std::shared_ptr<SymbolService> symbols,
                                                const SourceTable& table) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  // What the host cannot do is said before anything about the targets.
  std::string reason;
  PATHPROF_ASSIGN_OR_RETURN(auto chosen, table.Choose(config.source, caps, &reason));
  PATHPROF_RETURN_IF_ERROR(CheckTargetsExist(config.pids));
  auto impl = std::make_unique<Impl>(std::move(id), std::move(config), std::move(symbols));
  Impl* s = impl.get();
  PATHPROF_RETURN_IF_ERROR(s->ConfineTargets());
  s->ingestor =
      std::make_unique<Ingestor>(s->config.queues, [s](uint32_t pid) { return s->Lookup(pid); });
  // Stacks first, as a held command's tracer then attaches last: started first, it burst
  // through the sampler's load while the command was still held (tens of skipped bursts) and
  // took windows in its dynamic loader's start-up.
  const BranchSourceRow* first = table.Find(chosen);
  PATHPROF_RETURN_IF_ERROR(s->SetWindows(first ? first->windows : BranchWindows::kNone));
  s->StartStackSource(table);
  PATHPROF_RETURN_IF_ERROR(s->StartBranchSource(table, chosen, caps, std::move(reason)));
  if (s->sources.empty()) {
    s->ingestor->Close();
    return Status(ErrorCode::kUnavailable, "nothing to collect: " + s->info.stacks_reason +
                                               "; branches: " + s->info.source_reason);
  }
  s->StartThreads();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::FromRecording(
    std::string id, SessionConfig config, std::shared_ptr<SymbolService> symbols,
    std::map<uint32_t, std::unique_ptr<ProfileStore>> stores, std::string source_reason) {
  config.pids.clear();
  for (const auto& [pid, store] : stores) config.pids.push_back(pid);
  auto impl = std::make_unique<Impl>(std::move(id), std::move(config), std::move(symbols));
  for (auto& [pid, store] : stores)
    impl->stores.emplace(pid, std::shared_ptr<ProfileStore>(std::move(store)));
  impl->info.state = SessionState::kStopped;
  impl->info.source_reason = std::move(source_reason);
  impl->info.stacks_reason = "a recording: no live collection";
  impl->info.stopped_unix_ms = impl->info.started_unix_ms;
  // Nothing to stop: Stop() and WaitEnded() see a session that has ended.
  impl->torn_down = true;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  Stop();
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

}  // namespace pathprof::pipeline
