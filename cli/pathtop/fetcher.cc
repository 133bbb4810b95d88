#include "pathtop/fetcher.h"

#include <algorithm>
#include <chrono>

namespace pathtop {

bool Inbox::empty() const {
  return !hot_paths && !subpaths && !cct && !call_pairs && !methods && !targets && !session &&
         !stats && !connection && view_errors.empty();
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
  if (options_.stop_owned_session && !owned_session_.empty()) {
    // Best effort: the daemon may be gone, and then so is the session.
    (void)client_->StopSession(owned_session_);
  }
}

void Fetcher::SetView(View view) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_ = view;
    wake_ = true;
  }
  cv_.notify_all();
}

void Fetcher::SetTarget(TargetSpec target) {
  std::string old_owned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    target_ = std::move(target);
    session_id_.clear();
    old_owned = std::move(owned_session_);
    owned_session_.clear();
    wake_ = true;
  }
  if (options_.stop_owned_session && !old_owned.empty()) (void)client_->StopSession(old_owned);
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

Status Fetcher::EstablishSession(const TargetSpec& target) {
  // Join a running session for the same process before starting a new one, so two pathtops
  // (or pathtop next to pathctl) share one profile instead of doubling the overhead.
  auto sessions = client_->ListSessions();
  if (!sessions.ok()) return sessions.status();
  std::vector<uint32_t> wanted;
  if (target.pid != 0) {
    wanted.push_back(target.pid);
  } else {
    v1::ListTargetsRequest req;
    req.set_name_filter(target.comm);
    auto targets = client_->ListTargets(req);
    if (!targets.ok()) return targets.status();
    for (const v1::Target& t : targets->targets()) {
      if (t.comm() == target.comm) wanted.push_back(t.pid());
    }
  }
  for (const v1::Session& s : sessions->sessions()) {
    if (s.state() != v1::SESSION_STATE_RUNNING) continue;
    for (uint32_t pid : s.pids()) {
      if (std::find(wanted.begin(), wanted.end(), pid) != wanted.end()) {
        std::lock_guard<std::mutex> lock(mu_);
        session_id_ = s.id();
        inbox_.session = s;
        return Status::Ok();
      }
    }
  }
  v1::StartSessionRequest req;
  if (target.pid != 0) {
    req.set_pid(target.pid);
  } else {
    req.set_executable_name(target.comm);
  }
  req.set_source(options_.source);
  req.mutable_sampling()->set_step_mode(options_.step_mode);
  auto started = client_->StartSession(req);
  if (!started.ok()) return started.status();
  std::lock_guard<std::mutex> lock(mu_);
  session_id_ = started->id();
  owned_session_ = started->id();
  inbox_.session = *started;
  return Status::Ok();
}

Status Fetcher::PollOnce(View view, const std::string& session_id) {
  auto view_error = [&](View v, const Status& s) {
    Publish([&](Inbox* in) { in->view_errors.emplace_back(v, s.message()); });
  };
  // Keeps going on a per-view error (unsupported, invalid top-k), stops on a lost daemon or
  // session, which the caller handles.
  auto check = [&](View v, const Status& s) -> Status {
    if (s.ok()) return s;
    if (IsConnectionError(s) || s.code() == ErrorCode::kNotFound) return s;
    view_error(v, s);
    return Status::Ok();
  };

  if (view == View::kTargets) {
    auto r = client_->ListTargets(v1::ListTargetsRequest());
    if (r.ok()) Publish([&](Inbox* in) { in->targets = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  }
  if (session_id.empty()) return Status::Ok();

  auto stats = client_->GetStats(session_id);
  if (stats.ok()) {
    double now = SteadySeconds();
    Publish([&](Inbox* in) {
      in->stats = std::move(stats.value());
      in->stats_time_s = now;
    });
  } else if (IsConnectionError(stats.status())) {
    return stats.status();
  }

  bool poll_paths;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poll_paths = watch_unsupported_;
  }
  if (view == View::kHotPaths && poll_paths) {
    v1::GetHotPathsRequest req;
    req.set_session_id(session_id);
    req.set_top_k(options_.top_k);
    req.set_with_blocks(true);
    auto r = client_->GetHotPaths(req);
    if (r.ok()) Publish([&](Inbox* in) { in->hot_paths = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  } else if (view == View::kSubpaths) {
    v1::GetHotSubpathsRequest req;
    req.set_session_id(session_id);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotSubpaths(req);
    if (r.ok()) Publish([&](Inbox* in) { in->subpaths = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  } else if (view == View::kCct) {
    v1::GetCallingContextTreeRequest req;
    req.set_session_id(session_id);
    req.set_max_depth(64);
    req.set_min_weight(0.001);
    auto r = client_->GetCallingContextTree(req);
    if (r.ok()) Publish([&](Inbox* in) { in->cct = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  } else if (view == View::kCallPairs) {
    v1::GetHotCallPairsRequest req;
    req.set_session_id(session_id);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotCallPairs(req);
    if (r.ok()) Publish([&](Inbox* in) { in->call_pairs = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  } else if (view == View::kMethods) {
    v1::GetHotMethodsRequest req;
    req.set_session_id(session_id);
    req.set_top_k(options_.top_k);
    auto r = client_->GetHotMethods(req);
    if (r.ok()) Publish([&](Inbox* in) { in->methods = std::move(r.value()); });
    PATHPROF_RETURN_IF_ERROR(check(view, r.status()));
  }
  return Status::Ok();
}

void Fetcher::PollLoop() {
  const double kFirstBackoff = 0.5;
  double backoff = kFirstBackoff;
  int attempt = 0;
  bool announced = false;  // the UI starts with "connecting"
  while (true) {
    TargetSpec target;
    std::string session_id;
    View view;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      target = target_;
      session_id = session_id_;
      view = view_;
    }

    Status status = Status::Ok();
    bool fresh_session = false;
    if (session_id.empty() && !target.empty()) {
      status = EstablishSession(target);
      if (status.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        session_id = session_id_;
        fresh_session = true;
      }
    }
    if (status.ok()) status = PollOnce(view, session_id);

    if (status.ok()) {
      if (fresh_session || attempt > 0 || !announced) {
        announced = true;
        ConnectionState c;
        c.connected = true;
        {
          std::lock_guard<std::mutex> lock(mu_);
          c.reconnected = lost_daemon_;
        }
        SetConnection(c);
        cv_.notify_all();  // the watch thread waits for a session
      }
      attempt = 0;
      backoff = kFirstBackoff;
      if (!WaitFor(options_.interval_s)) return;
      continue;
    }

    // Lost the daemon or the session: forget the session (a restarted daemon has none), say so,
    // and retry with exponential backoff.
    {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_.clear();
      if (IsConnectionError(status)) lost_daemon_ = true;
    }
    ++attempt;
    ConnectionState c;
    c.connected = !IsConnectionError(status);
    c.message = status.message();
    c.attempt = attempt;
    c.retry_in_s = backoff;
    if (c.connected) {
      // The daemon answered but refused (no such process, permission): show it as a problem
      // while retrying, since the process may appear.
      c.connected = false;
    }
    SetConnection(c);
    if (!WaitFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.max_backoff_s);
  }
}

void Fetcher::WatchLoop() {
  while (true) {
    std::string session_id;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || (!session_id_.empty() && !watch_unsupported_); });
      if (stop_) return;
      session_id = session_id_;
    }
    v1::WatchHotPathsRequest req;
    req.mutable_query()->set_session_id(session_id);
    req.mutable_query()->set_top_k(options_.top_k);
    req.mutable_query()->set_with_blocks(true);
    req.set_interval_ms(static_cast<uint32_t>(options_.interval_s * 1000));
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
    // The stream ended: the session ended, the daemon went away or the target changed. Start
    // again once the poll loop has (re)established a session, at most once a second.
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
  }
}

}  // namespace pathtop
