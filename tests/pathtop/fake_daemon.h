// A tiny in-test PathProfiler server over a real gRPC Unix socket, answering the RPCs pathtop
// uses with a fixed, known profile. Used where the test is about pathtop's side (reconnects,
// the screen), not about the daemon's numbers; the end-to-end test uses the real pathprofd.
#pragma once

#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathtop_test {

namespace v1 = ::pathprof::v1;

inline v1::Location Loc(const std::string& fn, uint64_t base, uint64_t off) {
  v1::Location l;
  l.set_function(fn);
  l.set_address(base + off);
  l.set_offset(off);
  l.set_file("/src/examples/loop/loop.c");
  l.set_line(static_cast<uint32_t>(10 + off / 8));
  return l;
}

// The known profile: hot_loop dominates.
inline v1::HotPaths KnownHotPaths(const std::string& session) {
  v1::HotPaths msg;
  msg.set_session(session);
  msg.set_total(1000);
  msg.set_paths_distinct(7);
  struct P {
    const char* fn;
    uint64_t base;
    std::vector<uint64_t> offs;
    double value;
  };
  std::vector<P> ps = {{"hot_loop", 0x401100, {0x10, 0x24, 0x38}, 620},
                       {"mix", 0x401200, {0x0, 0x1c}, 210},
                       {"checksum", 0x401300, {0x8, 0x14, 0x30, 0x44}, 120},
                       {"main", 0x401400, {0x40}, 50}};
  for (const P& p : ps) {
    v1::HotPath* h = msg.add_paths();
    *h->mutable_start() = Loc(p.fn, p.base, p.offs[0]);
    h->set_length(static_cast<uint32_t>(p.offs.size()));
    h->set_outcomes(0b101);
    h->mutable_estimate()->set_value(p.value);
    h->mutable_estimate()->set_error_bound(p.value / 20);
    h->mutable_estimate()->set_confidence(0.95);
    h->mutable_estimate()->set_share(p.value / 1000);
    for (uint64_t o : p.offs) *h->add_blocks() = Loc(p.fn, p.base, o);
  }
  return msg;
}

class FakeProfiler final : public v1::PathProfiler::Service {
 public:
  explicit FakeProfiler(uint32_t pid) : pid_(pid) {}

  std::atomic<int> start_calls{0};
  std::atomic<int> stop_calls{0};
  std::atomic<int> delete_calls{0};
  std::atomic<int> last_start_source{-1};  // the SourceChoice the last StartSession asked for
  std::atomic<int> watch_calls{0};
  // The last GetHotPaths that asked for one calling context (ContextSelector.node), 0: none.
  std::atomic<int64_t> last_context_node{0};
  std::atomic<int32_t> last_context_pid{0};
  std::atomic<bool> stopping{false};

  grpc::Status ListTargets(grpc::ServerContext*, const v1::ListTargetsRequest*,
                           v1::ListTargetsResponse* out) override {
    v1::Target* t = out->add_targets();
    t->set_pid(pid_);
    t->set_uid(0);
    t->set_comm("loop");
    t->set_executable("/usr/local/bin/loop");
    v1::Target* u = out->add_targets();
    u->set_pid(1);
    u->set_comm("init");
    u->set_executable("/sbin/init");
    return grpc::Status::OK;
  }
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sessions_) *out->add_sessions() = s;
    return grpc::Status::OK;
  }
  grpc::Status StartSession(grpc::ServerContext*, const v1::StartSessionRequest* req,
                            v1::Session* out) override {
    ++start_calls;
    last_start_source = req->source();
    if (req->pid() != static_cast<int32_t>(pid_))
      return {grpc::StatusCode::NOT_FOUND, "no process " + std::to_string(req->pid())};
    std::lock_guard<std::mutex> lock(mu_);
    v1::Session s;
    s.set_name("sessions/s" + std::to_string(++session_count_));
    s.add_pids(pid_);
    s.set_state(v1::SESSION_STATE_RUNNING);
    // As pathprofd: the source asked for, or ptrace where auto finds no PMU.
    const bool none = req->source() == v1::SOURCE_CHOICE_NONE;
    s.set_source(none ? v1::BRANCH_SOURCE_NONE : v1::BRANCH_SOURCE_PTRACE);
    s.set_source_reason(none ? "asked for" : "no PMU in this VM");
    sessions_.push_back(s);
    *out = s;
    return grpc::Status::OK;
  }
  grpc::Status StopSession(grpc::ServerContext*, const v1::StopSessionRequest* req,
                           v1::Session* out) override {
    ++stop_calls;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : sessions_) {
      if (s.name() == req->name()) {
        s.set_state(v1::SESSION_STATE_STOPPED);
        *out = s;
        return grpc::Status::OK;
      }
    }
    return {grpc::StatusCode::NOT_FOUND, "no session " + req->name()};
  }
  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest* req,
                             v1::DeleteSessionResponse* out) override {
    ++delete_calls;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->name() == req->name()) {
        *out->mutable_deleted() = *it;
        sessions_.erase(it);
        return grpc::Status::OK;
      }
    }
    return {grpc::StatusCode::NOT_FOUND, "no session " + req->name()};
  }
  grpc::Status GetHotPaths(grpc::ServerContext*, const v1::GetHotPathsRequest* req,
                           v1::HotPaths* out) override {
    if (!HasSession(req->session())) return NoSession(req->session());
    *out = PathsOf(req->session());
    if (req->has_context()) {
      // As pathprofd: the paths of the windows attributed to that context (here, the context
      // of hot_loop, node 3, has the first path only; any other matches no window).
      last_context_node = req->context().node();
      last_context_pid = req->context().pid();
      const bool hot_loop = req->context().node() == kContextIdOfNode * 3;
      if (!hot_loop) out->clear_paths();
      while (out->paths_size() > 1) out->mutable_paths()->RemoveLast();
      out->set_contexts_matched(hot_loop ? 1 : 0);
      out->set_context_windows(hot_loop ? 40 : 0);
    }
    return grpc::Status::OK;
  }
  // CctNode.context_id of node N is N * kContextIdOfNode: unlike the answer's node ids.
  static constexpr int64_t kContextIdOfNode = 100;
  // What a session's target does, as the daemon sees it: e.g. TARGET_EXITED when it exits.
  void SetState(const std::string& name, v1::SessionState state, int64_t ended_unix_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : sessions_) {
      if (s.name() != name) continue;
      s.set_state(state);
      *s.mutable_end_time() =
          google::protobuf::util::TimeUtil::MillisecondsToTimestamp(ended_unix_ms);
    }
  }
  size_t session_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }
  std::vector<v1::Session> sessions() {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_;
  }
  grpc::Status WatchHotPaths(grpc::ServerContext* ctx, const v1::WatchHotPathsRequest* req,
                             grpc::ServerWriter<v1::HotPaths>* writer) override {
    ++watch_calls;
    if (!HasSession(req->query().session())) return NoSession(req->query().session());
    while (!ctx->IsCancelled() && !stopping) {
      if (!writer->Write(PathsOf(req->query().session()))) break;
      if (!Running(req->query().session())) break;  // as pathprofd: the final report
      const int64_t interval_ms =
          google::protobuf::util::TimeUtil::DurationToMilliseconds(req->interval());
      for (int64_t waited = 0; waited < interval_ms && !ctx->IsCancelled() && !stopping;
           waited += 20) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status GetHotSubpaths(grpc::ServerContext*, const v1::GetHotSubpathsRequest* req,
                              v1::HotSubpaths* out) override {
    if (!HasSession(req->session())) return NoSession(req->session());
    v1::Subpath* s = out->add_subpaths();
    for (uint64_t o : {0x10, 0x24, 0x38, 0x10}) *s->add_blocks() = Loc("hot_loop", 0x401100, o);
    s->set_length(4);
    s->mutable_estimate()->set_value(4800);
    s->mutable_estimate()->set_error_bound(310);
    s->mutable_estimate()->set_share(0.48);
    v1::Subpath* t = out->add_subpaths();
    for (uint64_t o : {0x0, 0x1c}) *t->add_blocks() = Loc("mix", 0x401200, o);
    t->set_length(2);
    t->mutable_estimate()->set_value(1500);
    t->mutable_estimate()->set_share(0.15);
    out->set_sampling_frequency(4);
    return grpc::Status::OK;
  }
  grpc::Status GetCallingContextTree(grpc::ServerContext*,
                                     const v1::GetCallingContextTreeRequest* req,
                                     v1::CallingContextTree* out) override {
    if (!HasSession(req->session())) return NoSession(req->session());
    auto node = [&](uint64_t id, uint64_t parent, const char* fn, uint64_t base, double self,
                    double total) {
      v1::CctNode* n = out->add_nodes();
      n->set_id(id);
      n->set_parent_id(parent);
      *n->mutable_function() = Loc(fn, base, 0);
      if (parent != 0) *n->mutable_call_site() = Loc("caller", 0x401000, id * 4);
      n->set_self_weight(self);
      n->set_total_weight(total);
      n->set_edge_weight(total / 2);
      n->set_context_id(static_cast<int64_t>(id) * kContextIdOfNode);
      n->set_pid(static_cast<int32_t>(pid_));
    };
    node(1, 0, "_start", 0x401000, 0, 100);
    node(2, 1, "main", 0x401400, 5, 100);
    node(3, 2, "hot_loop", 0x401100, 62, 62);
    node(4, 2, "mix", 0x401200, 21, 30);
    node(5, 4, "checksum", 0x401300, 9, 9);
    node(6, 2, "rarely_called", 0x401500, 3, 3);
    out->set_total_weight(100);
    out->set_samples(100);
    return grpc::Status::OK;
  }
  grpc::Status GetHotCallPairs(grpc::ServerContext*, const v1::GetHotCallPairsRequest* req,
                               v1::HotCallPairs* out) override {
    if (!HasSession(req->session())) return NoSession(req->session());
    v1::CallPair* p = out->add_pairs();
    *p->mutable_call_site() = Loc("main", 0x401400, 0x2c);
    *p->mutable_target() = Loc("hot_loop", 0x401100, 0);
    p->mutable_estimate()->set_value(9000);
    p->mutable_estimate()->set_share(0.75);
    v1::CallPair* q = out->add_pairs();
    *q->mutable_call_site() = Loc("mix", 0x401200, 0x30);
    *q->mutable_target() = Loc("checksum", 0x401300, 0);
    q->mutable_estimate()->set_value(3000);
    q->mutable_estimate()->set_share(0.25);
    return grpc::Status::OK;
  }
  grpc::Status GetHotMethods(grpc::ServerContext*, const v1::GetHotMethodsRequest* req,
                             v1::HotMethods* out) override {
    if (!HasSession(req->session())) return NoSession(req->session());
    v1::HotMethod* m = out->add_methods();
    *m->mutable_function() = Loc("hot_loop", 0x401100, 0);
    m->mutable_self()->set_value(62);
    m->mutable_self()->set_share(0.62);
    m->mutable_entries()->set_value(9000);
    m->mutable_entries()->set_share(0.75);
    v1::HotMethod* n = out->add_methods();
    *n->mutable_function() = Loc("mix", 0x401200, 0);
    n->mutable_self()->set_value(21);
    n->mutable_self()->set_share(0.21);
    out->set_hot_data_streams_unsupported("LBR and PT carry no data addresses");
    return grpc::Status::OK;
  }
  grpc::Status GetStats(grpc::ServerContext*, const v1::GetStatsRequest*, v1::Stats* out) override {
    int n = ++stats_calls_;
    v1::TargetStats* t = out->add_targets();
    t->set_pid(pid_);
    t->set_stack_samples(99ull * n);
    t->set_windows(40ull * n);
    t->set_branches(1280ull * n);
    v1::DropCount* d = t->add_drops();
    d->set_reason("broken-window");
    d->set_count(3);
    out->set_daemon_cpu_seconds(0.01 * n);
    out->set_daemon_rss_bytes(24u << 20);
    return grpc::Status::OK;
  }

 private:
  bool HasSession(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sessions_) {
      if (s.name() == id) return true;
    }
    return false;
  }
  bool Running(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sessions_) {
      if (s.name() == id) return s.state() == v1::SESSION_STATE_RUNNING;
    }
    return false;
  }
  // A stacks-only session (source none) has no branches, hence no hot paths.
  v1::HotPaths PathsOf(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sessions_) {
      if (s.name() == id && s.source() == v1::BRANCH_SOURCE_NONE) {
        v1::HotPaths empty;
        empty.set_session(id);
        return empty;
      }
    }
    return KnownHotPaths(id);
  }
  static grpc::Status NoSession(const std::string& id) {
    return {grpc::StatusCode::NOT_FOUND, "no session " + id};
  }

  uint32_t pid_;
  std::mutex mu_;
  std::vector<v1::Session> sessions_;
  int session_count_ = 0;  // ids stay unique after deletes
  std::atomic<int> stats_calls_{0};
};

// The fake service listening on a Unix socket; Stop() ends streams and closes the socket, as a
// daemon that exits.
class FakeDaemon {
 public:
  FakeDaemon(const std::string& socket, uint32_t pid) : service_(pid) {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
  }
  ~FakeDaemon() { Stop(); }
  bool ok() const { return server_ != nullptr; }
  FakeProfiler& service() { return service_; }
  void Stop() {
    if (!server_) return;
    service_.stopping = true;
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    server_->Wait();
    server_.reset();
  }

 private:
  FakeProfiler service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace pathtop_test
