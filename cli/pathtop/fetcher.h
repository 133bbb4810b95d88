// Talks to pathprofd off the UI thread: starts or joins the session, follows WatchHotPaths,
// polls the session's state, the current view and GetStats every interval, and reconnects with
// backoff when the daemon goes away. A restarted daemon has no sessions: pathtop re-creates the
// one it showed with the same branch source (never the daemon's default in its place) and says
// so; a session that had ended (its target exited) is not re-created. At exit it deletes the
// sessions it started, unless told to keep them. The UI takes the newest answers with Take();
// nothing here touches the terminal.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pathtop/client.h"
#include "pathtop/model.h"

namespace pathtop {

struct TargetSpec {
  uint32_t pid = 0;  // 0 with an empty comm: no target yet (the process list)
  std::string comm;
  // A session that exists (sessions/ID: an imported recording, another client's): shown as it
  // is, never started, replaced or ended by pathtop.
  std::string session;
  bool empty() const { return pid == 0 && comm.empty() && session.empty(); }
};

struct FetcherOptions {
  double interval_s = 2.0;
  uint32_t top_k = 50;
  bool stop_owned_session = true;  // stop and delete, at exit, the sessions this pathtop started
  // For a session pathtop starts: the branch source and how ptrace bursts step (unset: auto).
  v1::SourceChoice source = v1::SOURCE_CHOICE_AUTO;
  v1::StepMode step_mode = v1::STEP_MODE_UNSPECIFIED;
  double max_backoff_s = 8.0;
};

// Everything new since the last Take(): the newest answer of each kind.
struct Inbox {
  std::optional<v1::HotPaths> hot_paths;
  std::optional<v1::HotSubpaths> subpaths;
  std::optional<v1::CallingContextTree> cct;
  std::optional<v1::HotCallPairs> call_pairs;
  std::optional<v1::HotMethods> methods;
  std::optional<v1::HotPaths> context_paths;  // the hot paths of the context the view picked
  std::optional<v1::ListTargetsResponse> targets;
  std::optional<v1::Session> session;
  std::optional<v1::Stats> stats;
  double stats_time_s = 0;  // steady clock when the stats were fetched
  std::optional<ConnectionState> connection;
  std::vector<std::pair<View, std::string>> view_errors;
  bool empty() const;
};

double SteadySeconds();

class Fetcher {
 public:
  Fetcher(std::unique_ptr<Client> client, std::string address, TargetSpec target,
          FetcherOptions options);
  ~Fetcher();

  void Start();
  void Stop();  // cancels the stream, joins, ends the sessions it started (unless kept)

  // And fetch it now; `context`: the calling context View::kContextPaths asks about.
  void SetView(View view, ContextPick context = {});
  void SetTarget(TargetSpec target);  // switch process (from the process list)
  Inbox Take();

 private:
  void PollLoop();
  void WatchLoop();
  Status EstablishSession(const TargetSpec& target);
  Result<std::vector<uint32_t>> WantedPids(const TargetSpec& target);
  Status StartOwnSession(const TargetSpec& target);
  void Adopt(const v1::Session& session, bool owned);
  // Connected (again): the UI's connection state, with a notice of what changed.
  void AnnounceConnected();
  Status RefreshSession(const std::string& session_name);
  Status PollOnce(View view, const std::string& session_name);
  Status PollView(View view, const std::string& session_name);
  bool ShouldEstablish(const TargetSpec& target, const std::string& session_name);
  Status FindEndedSession();
  void Lost(const Status& status);
  void EndOwnedSessions();
  void Publish(const std::function<void(Inbox*)>& fill);
  void SetConnection(ConnectionState state);
  bool WaitFor(double seconds);  // false when stopping

  std::unique_ptr<Client> client_;
  std::string address_;
  FetcherOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;
  View view_ = View::kHotPaths;
  ContextPick context_;
  TargetSpec target_;
  std::string session_name_;  // empty: none yet, or lost with the daemon
  uint64_t generation_ = 0;   // counts sessions established, so the stream knows a new one
  std::vector<std::string> owned_sessions_;  // started by this pathtop, ended at exit
  // The session last shown, kept when it is lost: a re-created one asks for its source, and one
  // that had ended is not re-created.
  std::optional<v1::Session> last_session_;
  std::string notice_;  // what the next "connected" state says (a re-created session)
  bool watch_unsupported_ = false;
  bool lost_daemon_ = false;
  Inbox inbox_;

  std::thread poll_thread_, watch_thread_;
};

}  // namespace pathtop
