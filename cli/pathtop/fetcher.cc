#include "pathtop/fetcher.h"

#include <algorithm>
#include <chrono>

#include <google/protobuf/util/time_util.h>

#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"

namespace pathtop {

bool Inbox::empty() const {
  return !hot_paths && !subpaths && !cct && !call_pairs && !methods && !context_paths && !targets &&
         !session && !stats && !connection && view_errors.empty();
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Fetcher::Fetcher(std::unique_ptr<Client> client, std::string address, TargetSpec target,
                 FetcherOptions options)
    : client_(std::move(client)),
      address_(std::move(address)),
      options_(options),
      target_(std::move(target)) {}

Fetcher::~Fetcher() {
  Stop();
}

void Fetcher::Start() {
  if (target_.empty()) view_ = View::kTargets;
  poll_thread_ = std::thread([this] { PollLoop(); });
  watch_thread_ = std::thread([this] { WatchLoop(); });
}

void Fetcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  client_->CancelWatch();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  EndOwnedSessions();
}

// Deletes (which stops) every session this pathtop started: a stopped one would still be
// listed and count against the caller's session quota until its retention ends. Best effort:
// a session that went with a daemon restart is already gone.
void Fetcher::EndOwnedSessions() {
  std::vector<std::string> owned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    owned.swap(owned_sessions_);
  }
  if (!options_.stop_owned_session) return;
  for (const std::string& id : owned) {
    auto deleted = client_->DeleteSession(id);
    // An older daemon without DeleteSession: at least stop it.
    if (!deleted.ok() && deleted.status().code() == ErrorCode::kUnsupported) {
      (void)client_->StopSession(id);
    }
  }
}

void Fetcher::SetView(View view, ContextPick context) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_ = view;
    context_ = std::move(context);
    wake_ = true;
  }
  cv_.notify_all();
}

void Fetcher::SetTarget(TargetSpec target) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    target_ = std::move(target);
    session_name_.clear();
    last_session_.reset();  // another process: nothing of the old session carries over
    wake_ = true;
  }
  EndOwnedSessions();
  client_->CancelWatch();
  cv_.notify_all();
}

Inbox Fetcher::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  Inbox out = std::move(inbox_);
  inbox_ = Inbox();
  return out;
}

void Fetcher::Publish(const std::function<void(Inbox*)>& fill) {
  std::lock_guard<std::mutex> lock(mu_);
  fill(&inbox_);
}

void Fetcher::SetConnection(ConnectionState state) {
  state.target = address_;
  Publish([&](Inbox* in) { in->connection = state; });
}

bool Fetcher::WaitFor(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_ || wake_; });
  wake_ = false;
  return !stop_;
}

Result<std::vector<uint32_t>> Fetcher::WantedPids(const TargetSpec& target) {
  if (target.pid != 0) return std::vector<uint32_t>{target.pid};
  v1::ListTargetsRequest req;
  req.set_name_filter(target.comm);
  auto targets = client_->ListTargets(req);
  if (!targets.ok()) return targets.status();
  std::vector<uint32_t> wanted;
  for (const v1::Target& t : targets->targets()) {
    if (t.comm() == target.comm) wanted.push_back(t.pid());
  }
  return wanted;
}

// Makes `session` the one shown; a replacement for a lost one is announced with its source.
void Fetcher::Adopt(const v1::Session& session, bool owned) {
  std::lock_guard<std::mutex> lock(mu_);
  // Starting while a session was shown means that one was lost (a daemon restart); joining
  // another than the one shown means the same. Re-joining the same one after an outage is not
  // news.
  if (last_session_ && (owned || last_session_->name() != session.name())) {
    using pathprof::api::SessionIdForDisplay;
    const std::string now = SessionIdForDisplay(session.name());
    const std::string before = SessionIdForDisplay(last_session_->name());
    notice_ = (owned ? "re-created the session as " : "joined session ") + now + ", source " +
              std::string(pathprof::api::BranchSourceWord(session.source()));
    notice_ += session.source() == last_session_->source()
                   ? " as " + before + " had"
                   : " (" + before + " had " +
                         std::string(pathprof::api::BranchSourceWord(last_session_->source())) +
                         ")";
  }
  session_name_ = session.name();
  ++generation_;
  last_session_ = session;
  if (owned) owned_sessions_.push_back(session.name());
  inbox_.session = session;
}

Status Fetcher::StartOwnSession(const TargetSpec& target) {
  v1::StartSessionRequest req;
  if (target.pid != 0) {
    req.set_pid(target.pid);
  } else {
    req.set_executable_name(target.comm);
  }
  {
    // The source of the session this one replaces, when there was one: a restarted daemon's
    // own choice (its default, or `auto` on another day) must not silently replace it.
    std::lock_guard<std::mutex> lock(mu_);
    const bool replacing =
        last_session_ && last_session_->source() != v1::BRANCH_SOURCE_UNSPECIFIED;
    req.set_source(replacing ? pathprof::api::SourceChoiceFor(last_session_->source())
                             : options_.source);
  }
  req.mutable_sampling()->set_step_mode(options_.step_mode);
  auto started = client_->StartSession(req);
  if (!started.ok()) return started.status();
  Adopt(*started, true);
  return Status::Ok();
}

Status Fetcher::EstablishSession(const TargetSpec& target) {
  // Join a running session for the same process before starting a new one, so two pathtops
  // (or pathtop next to pathctl) share one profile instead of doubling the overhead.
  auto sessions = client_->ListSessions();
  if (!sessions.ok()) return sessions.status();
  if (!target.session.empty()) {
    for (const v1::Session& s : sessions->sessions()) {
      if (s.name() != target.session) continue;
      Adopt(s, false);
      return Status::Ok();
    }
    return Status(ErrorCode::kNotFound,
                  "no " + target.session + " in the daemon (pathctl sessions lists them)");
  }
  auto wanted = WantedPids(target);
  if (!wanted.ok()) return wanted.status();
  for (const v1::Session& s : sessions->sessions()) {
    if (s.state() != v1::SESSION_STATE_RUNNING) continue;
    for (uint32_t pid : s.pids()) {
      if (std::find(wanted->begin(), wanted->end(), pid) != wanted->end()) {
        // Not owned: pathtop ends only sessions it started (its own stays in owned_sessions_
        // when it is re-joined after a passing outage).
        Adopt(s, false);
        return Status::Ok();
      }
    }
  }
  return StartOwnSession(target);
}

// The session's state as the daemon has it now: the header must say when it ended (the target
// exited, someone stopped it), not go on saying what it was when pathtop started.
Status Fetcher::RefreshSession(const std::string& session_name) {
  auto sessions = client_->ListSessions();
  if (!sessions.ok()) return sessions.status();
  for (const v1::Session& s : sessions->sessions()) {
    if (s.name() != session_name) continue;
    std::lock_guard<std::mutex> lock(mu_);
    last_session_ = s;
    inbox_.session = s;
    return Status::Ok();
  }
  return Status(ErrorCode::kNotFound, "session " + session_name + " is gone");
}

// Keeps going on a per-view error (unsupported, invalid top-k), which is shown on its view;
// stops on a lost daemon or session, which the poll loop handles.
#define PATHTOP_VIEW_CHECK(view, status)                                             \
  do {                                                                               \
    const Status& _s = (status);                                                     \
    if (!_s.ok()) {                                                                  \
      if (IsConnectionError(_s) || _s.code() == ErrorCode::kNotFound) return _s;     \
      Publish([&](Inbox* in) { in->view_errors.emplace_back(view, _s.message()); }); \
    }                                                                                \
  } while (0)

Status Fetcher::PollOnce(View view, const std::string& session_name) {
  if (view == View::kTargets) {
    auto r = client_->ListTargets(v1::ListTargetsRequest());
    if (r.ok()) Publish([&](Inbox* in) { in->targets = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  }
  if (session_name.empty()) return Status::Ok();
  PATHPROF_RETURN_IF_ERROR(RefreshSession(session_name));

  auto stats = client_->GetStats(session_name);
  if (stats.ok()) {
    double now = SteadySeconds();
    Publish([&](Inbox* in) {
      in->stats = std::move(stats.value());
      in->stats_time_s = now;
    });
  } else if (IsConnectionError(stats.status())) {
    return stats.status();
  }
  return PollView(view, session_name);
}

Status Fetcher::PollView(View view, const std::string& session_name) {
  bool poll_paths;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poll_paths = watch_unsupported_;
  }
  if (view == View::kHotPaths && poll_paths) {
    v1::GetHotPathsRequest req;
    req.set_session(session_name);
    req.set_top_k(options_.top_k);
    req.set_with_blocks(true);
    auto r = client_->GetHotPaths(req);
    if (r.ok()) Publish([&](Inbox* in) { in->hot_paths = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  } else if (view == View::kSubpaths) {
    v1::GetHotSubpathsRequest req;
    req.set_session(session_name);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotSubpaths(req);
    if (r.ok()) Publish([&](Inbox* in) { in->subpaths = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  } else if (view == View::kContextPaths) {
    ContextPick context;
    {
      std::lock_guard<std::mutex> lock(mu_);
      context = context_;
    }
    if (context.node == 0) return Status::Ok();  // the model says why (no context id)
    v1::GetHotPathsRequest req;
    req.set_session(session_name);
    req.set_top_k(options_.top_k);
    req.set_with_blocks(true);
    req.mutable_context()->set_node(context.node);
    req.mutable_context()->set_pid(context.pid);
    auto r = client_->GetHotPaths(req);
    if (r.ok()) Publish([&](Inbox* in) { in->context_paths = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  } else if (view == View::kCct || view == View::kFlame) {  // the flame graph draws the tree
    v1::GetCallingContextTreeRequest req;
    req.set_session(session_name);
    req.set_max_depth(64);
    req.set_min_weight(0.001);
    auto r = client_->GetCallingContextTree(req);
    if (r.ok()) Publish([&](Inbox* in) { in->cct = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  } else if (view == View::kCallPairs) {
    v1::GetHotCallPairsRequest req;
    req.set_session(session_name);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotCallPairs(req);
    if (r.ok()) Publish([&](Inbox* in) { in->call_pairs = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  } else if (view == View::kMethods) {
    v1::GetHotMethodsRequest req;
    req.set_session(session_name);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotMethods(req);
    if (r.ok()) Publish([&](Inbox* in) { in->methods = std::move(r.value()); });
    PATHTOP_VIEW_CHECK(view, r.status());
  }
  return Status::Ok();
}

#undef PATHTOP_VIEW_CHECK

// Whether to start or join a session now. Not for a session that had ended and then went
// away (the daemon restarted after its target exited): the process is gone, and a new session
// would fail or, for --comm, profile other processes than the ones the screen showed.
bool Fetcher::ShouldEstablish(const TargetSpec& target, const std::string& session_name) {
  if (!session_name.empty() || target.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return !last_session_ || last_session_->state() == v1::SESSION_STATE_RUNNING ||
         last_session_->state() == v1::SESSION_STATE_UNSPECIFIED;
}

// After losing an ended session: back if the daemon was only away for a while, otherwise say
// that it went with a restart. Asking the daemon also tells whether it is reachable again.
Status Fetcher::FindEndedSession() {
  auto sessions = client_->ListSessions();
  if (!sessions.ok()) return sessions.status();
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = last_session_->name();
  }
  for (const v1::Session& s : sessions->sessions()) {
    if (s.name() == id) {
      Adopt(s, false);
      return Status::Ok();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  notice_ = "session " + pathprof::api::SessionIdForDisplay(id) +
            " had ended and went with the daemon restart (its profile too)";
  return Status::Ok();
}

// Lost the daemon or the session: forget the session (a restarted daemon has none); the
// session itself is kept in last_session_ for its source.
void Fetcher::Lost(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  session_name_.clear();
  notice_.clear();
  if (IsConnectionError(status)) lost_daemon_ = true;
}

void Fetcher::AnnounceConnected() {
  ConnectionState c;
  c.connected = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.reconnected = lost_daemon_;
    c.message = notice_;
  }
  SetConnection(c);
  cv_.notify_all();  // the watch thread waits for a session
}

void Fetcher::PollLoop() {
  const double kFirstBackoff = 0.5;
  double backoff = kFirstBackoff;
  int attempt = 0;
  bool announced = false;  // the UI starts with "connecting"
  while (true) {
    TargetSpec target;
    std::string session_name;
    View view;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      target = target_;
      session_name = session_name_;
      view = view_;
    }

    Status status = Status::Ok();
    const bool establish = ShouldEstablish(target, session_name);
    if (establish) {
      status = EstablishSession(target);
    } else if (session_name.empty() && !target.empty()) {
      status = FindEndedSession();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      session_name = session_name_;
    }
    if (status.ok()) status = PollOnce(view, session_name);

    if (status.ok()) {
      if (establish || attempt > 0 || !announced) {
        announced = true;
        AnnounceConnected();
      }
      attempt = 0;
      backoff = kFirstBackoff;
      if (!WaitFor(options_.interval_s)) return;
      continue;
    }

    Lost(status);
    ++attempt;
    // Not connected: the daemon is away, or it answered but refused (no such process,
    // permission), which is shown as a problem while retrying since the process may appear.
    ConnectionState c;
    c.message = status.message();
    c.attempt = attempt;
    c.retry_in_s = backoff;
    SetConnection(c);
    if (!WaitFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.max_backoff_s);
  }
}

void Fetcher::WatchLoop() {
  uint64_t finished = 0;  // the session generation whose stream ended with its final report
  while (true) {
    std::string session_name;
    uint64_t generation;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || (!session_name_.empty() && !watch_unsupported_ && generation_ != finished);
      });
      if (stop_) return;
      session_name = session_name_;
      generation = generation_;
    }
    v1::WatchHotPathsRequest req;
    req.mutable_query()->set_session(session_name);
    req.mutable_query()->set_top_k(options_.top_k);
    req.mutable_query()->set_with_blocks(true);
    *req.mutable_interval() = google::protobuf::util::TimeUtil::MillisecondsToDuration(
        static_cast<int64_t>(options_.interval_s * 1000));
    Status s = client_->WatchHotPaths(
        req, [this](const v1::HotPaths& msg) { Publish([&](Inbox* in) { in->hot_paths = msg; }); });
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    if (s.code() == ErrorCode::kUnsupported) {
      // An older daemon without the stream: the poll loop asks GetHotPaths instead.
      watch_unsupported_ = true;
      wake_ = true;
      cv_.notify_all();
      continue;
    }
    if (!IsConnectionError(s) && s.code() != ErrorCode::kIo) {
      inbox_.view_errors.emplace_back(View::kHotPaths, s.message());
    }
    // The daemon ends the stream of an ended session after its final report: asking again
    // would only fetch that report again.
    if (s.code() == ErrorCode::kIo && last_session_ &&
        last_session_->state() != v1::SESSION_STATE_RUNNING) {
      finished = generation;
    }
    // Otherwise the daemon went away or the target changed. Start again once the poll loop
    // has (re)established a session, at most once a second.
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
  }
}

}  // namespace pathtop

#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"
