#include "pathprof/daemon/service.h"

#include "pathprof/daemon/continuous.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <google/protobuf/util/time_util.h>

#include "pathprof/api/answers.h"
#include "pathprof/api/convert.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/api/queries.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/api/session_request.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/clock.h"
#include "pathprof/daemon/host_processes.h"
#include "pathprof/daemon/log.h"
#include "pathprof/pipeline/kernel_frames.h"
#include "process_stats.h"
#include "session_targets.h"

#ifndef PATHPROF_VERSION
#define PATHPROF_VERSION "0.1.0"
#endif

namespace pathprof::daemon {
namespace {

using api::FromProto;
using api::ToProto;

// The client's deadline has passed, or it cancelled (closed the call).
bool CallExpired(grpc::ServerContext* ctx) {
  return ctx->IsCancelled() || std::chrono::system_clock::now() > ctx->deadline();
}

using grpc::StatusCode;

using api::InvalidArgument;
using api::ToGrpc;  // the one ErrorCode -> gRPC mapping (api/grpc_status.h)

// Counts are signed on the wire (AIP-141): the request checks of api/queries.h refuse a
// negative one, or one above the server's bound, naming the field.
using api::AboveLimit;
using api::Bounded;
using api::NonNegative;

api::QueryLimits QueryLimitsOf(const Limits& l) {
  api::QueryLimits q;
  q.default_top_k = l.default_top_k;
  q.max_top_k = l.max_top_k;
  q.max_depth = l.max_depth;
  q.max_tree_nodes = l.max_tree_nodes;
  q.max_name_length = l.max_name_length;
  return q;
}

grpc::Status ClientGone() {
  return api::MakeError(StatusCode::CANCELLED, "client went away",
                        {.reason = v1::CLIENT_CANCELLED});
}

// Why a session the request was fine for did not start, for ErrorInfo: the pipeline's code
// says which of the target or the settings it was, where it is one of those.
v1::ErrorReason StartFailure(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kNotFound:
      return v1::TARGET_NOT_FOUND;  // the process exited since it was named
    case ErrorCode::kPermission:
      return v1::TARGET_NOT_PERMITTED;  // e.g. it runs a setuid program (confinement)
    case ErrorCode::kInvalidArgument:
      return v1::SESSION_SETTINGS_INVALID;
    default:
      return api::ReasonOf(s.code());  // UNSUPPORTED, UNAVAILABLE, ...: what the host lacks
  }
}

// The default page size of the two lists, and the most ListSessions returns at once.
constexpr int32_t kDefaultPageSize = 100;
constexpr int32_t kMaxSessionsPage = 1000;

}  // namespace

ProfilerService::ProfilerService(pipeline::SessionManager* sessions, const PeerRegistry* peers,
                                 const DaemonConfig& config)
    : sessions_(sessions), auth_(peers), rate_(config.limits.rate_qps, config.limits.rate_burst) {
  Configure(config);
}

void ProfilerService::Configure(const DaemonConfig& config) {
  auth_.Configure(config);
  rate_.Reconfigure(config.limits.rate_qps, config.limits.rate_burst);
  std::lock_guard<std::mutex> lock(mu_);
  limits_ = config.limits;
  stepping::ParseStepRequest(config.step_mode, &default_step_mode_);  // validated on load
  tracer_as_target_ = config.tracer_as_target;
  host_ = HostLabel(config.continuous);
}

Limits ProfilerService::limits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limits_;
}

void ProfilerService::BeginShutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  shutting_down_ = true;
  shutdown_cv_.notify_all();
}

std::map<std::string, RpcMetrics> ProfilerService::rpc_metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

template <typename F>
grpc::Status ProfilerService::Run(const char* method, grpc::ServerContext* context, F&& body) {
  auto t0 = std::chrono::steady_clock::now();
  Peer peer;
  grpc::Status s = auth_.Identify(context, &peer);
  if (s.ok()) {
    double retry_ms = 0;
    if (!rate_.Allow(peer.client_key(), &retry_ms)) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "rate limit: %s is over %.0f calls/s (limits.rate_qps); retry in %.0f ms",
               peer.client_key().c_str(), limits().rate_qps, retry_ms);
      s = api::MakeError(StatusCode::RESOURCE_EXHAUSTED, msg,
                         {.reason = v1::RATE_LIMITED, .limit = "limits.rate_qps"});
    } else {
      s = body(peer);
    }
  }
  s = api::WithErrorInfo(s);  // every failure carries an ErrorInfo (made with one, or its code's)
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Denials are worth a line each (an audit trail); rate-limit refusals come in floods, so only
  // at debug level (they are counted in /metrics).
  if (!s.ok() && s.error_code() != StatusCode::CANCELLED)
    Log(s.error_code() == StatusCode::RESOURCE_EXHAUSTED ? kLogDebug : kLogInfo,
        "%s from %s: %d %s", method, context->peer().c_str(), static_cast<int>(s.error_code()),
        s.error_message().c_str());
  std::lock_guard<std::mutex> lock(mu_);
  RpcMetrics& m = metrics_[method];
  ++m.by_code[static_cast<int>(s.error_code())];
  ++m.count;
  m.sum_seconds += secs;
  for (size_t i = 0; i < RpcMetrics::kNumBuckets; ++i)
    if (secs <= RpcMetrics::kBuckets[i]) {
      ++m.bucket_counts[i];
      break;
    }
  return s;
}

grpc::Status ProfilerService::Session(const Peer& peer, const std::string& name, const char* field,
                                      std::shared_ptr<pipeline::Session>* out) const {
  auto id = api::SessionIdFromName(name, field);
  if (!id.ok()) return ToGrpc(id.status(), {.reason = v1::SESSION_NAME_INVALID, .field = field});
  auto s = sessions_->Get(*id);
  if (!s)
    return api::MakeError(StatusCode::NOT_FOUND, "no session " + name + " (it may have expired)",
                          {.reason = v1::SESSION_NOT_FOUND, .field = field});
  uint32_t owner = s->Info().owner_uid;
  if (!Authorizer::MaySee(peer, owner))
    return api::MakeError(StatusCode::PERMISSION_DENIED,
                          "session " + name + " belongs to uid " + std::to_string(owner),
                          {.reason = v1::SESSION_NOT_PERMITTED, .field = field});
  // Authorization can change after the start: a target that execs a setuid program holds more
  // than its requester. The session then stops collecting; the reply still shows what it had.
  s->RecheckConfinement();
  *out = std::move(s);
  return grpc::Status::OK;
}

grpc::Status ProfilerService::CheckTopK(int32_t requested, uint32_t* top_k) const {
  return api::TopK(requested, QueryLimitsOf(limits()), top_k);
}

grpc::Status ProfilerService::GetCapabilities(grpc::ServerContext* ctx,
                                              const v1::GetCapabilitiesRequest*,
                                              v1::Capabilities* resp) {
  return Run("GetCapabilities", ctx, [&](const Peer&) {
    ToProto(sessions_->capabilities(), resp);
    resp->set_daemon_version(PATHPROF_VERSION);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::ListTargets(grpc::ServerContext* ctx,
                                          const v1::ListTargetsRequest* req,
                                          v1::ListTargetsResponse* resp) {
  return Run("ListTargets", ctx, [&](const Peer& peer) {
    Limits l = limits();
    if (req->name_filter().size() > l.max_name_length)
      return AboveLimit("name_filter length", req->name_filter().size(), l.max_name_length,
                        "max_name_length");
    if (grpc::Status s = NonNegative("page_size", req->page_size()); !s.ok()) return s;
    const uint32_t page = std::min<uint32_t>(req->page_size() ? req->page_size() : kDefaultPageSize,
                                             l.max_targets_listed);
    // The token holds the last pid of the previous page: processes come by pid, so a page
    // starts after it whatever started or exited in between.
    uint32_t after = 0;
    if (!req->page_token().empty()) {
      std::string last;
      if (grpc::Status s =
              page_tokens_.Read(req->page_token(), "ListTargets", req->name_filter(), &last);
          !s.ok())
        return s;
      after = static_cast<uint32_t>(std::stoul(last));  // signed by us: digits of a pid
    }
    std::vector<ProcessEntry> processes = ListProcesses();
    std::sort(processes.begin(), processes.end(),
              [](const ProcessEntry& a, const ProcessEntry& b) { return a.pid < b.pid; });
    for (auto& p : processes) {
      if (p.pid <= after || !Authorizer::MaySee(peer, p.uid)) continue;
      if (!req->name_filter().empty() && p.comm.find(req->name_filter()) == std::string::npos &&
          p.executable.find(req->name_filter()) == std::string::npos)
        continue;
      if (static_cast<uint32_t>(resp->targets_size()) >= page) {
        resp->set_next_page_token(
            page_tokens_.Make("ListTargets", req->name_filter(),
                              std::to_string(resp->targets(resp->targets_size() - 1).pid())));
        break;
      }
      auto* t = resp->add_targets();
      t->set_pid(p.pid);
      t->set_uid(p.uid);
      t->set_comm(p.comm);
      t->set_executable(p.executable);
      t->set_cgroup(p.cgroup);
      for (const auto& id : sessions_->SessionsFor(p.pid)) t->add_sessions(api::SessionName(id));
    }
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::CreateSession(grpc::ServerContext* ctx,
                                            const v1::CreateSessionRequest* req,
                                            v1::Session* resp) {
  return Run("CreateSession", ctx, [&](const Peer& peer) {
    return Create(ctx, peer, req->session().target(), req->session().settings(),
                  {.target = "session.target.", .settings = api::kCreateSettingsField}, resp);
  });
}

// The deprecated spelling of CreateSession: the same path, its fields named as it names them.
grpc::Status ProfilerService::StartSession(grpc::ServerContext* ctx,
                                           const v1::StartSessionRequest* req, v1::Session* resp) {
  return Run("StartSession", ctx, [&](const Peer& peer) {
    return Create(ctx, peer, api::TargetOf(*req), api::SettingsOf(*req), {}, resp);
  });
}

grpc::Status ProfilerService::Create(grpc::ServerContext* ctx, const Peer& peer,
                                     const v1::SessionTarget& target,
                                     const v1::SessionSettings& settings, FieldPrefixes fields,
                                     v1::Session* resp) {
  const Limits l = limits();
  pipeline::SessionConfig c;
  if (grpc::Status s = ResolveTargets(peer, target, fields.target, l, &c.pids); !s.ok()) return s;
  if (grpc::Status s = api::ToSessionConfig(settings, SessionBoundsOf(l), fields.settings, &c);
      !s.ok())
    return s;
  c.owner_uid = peer.uid;
  if (!peer.admin) c.confine_to_uid = peer.uid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.tracer_as_target = tracer_as_target_;
  }
  if (Status v = c.Validate(); !v.ok()) return ToGrpc(v, {.reason = v1::SESSION_SETTINGS_INVALID});
  std::lock_guard<std::mutex> start_lock(start_mu_);
  if (grpc::Status s = MakeRoom(peer, c.MemoryBoundBytes(), l); !s.ok()) return s;
  // A client whose deadline has passed has given up: a session started now would be one
  // nobody asked for, holding its quota (and its target under ptrace). Checked before the
  // start, and again after it, when the start itself outlasted the deadline.
  if (CallExpired(ctx))
    return api::MakeError(StatusCode::DEADLINE_EXCEEDED,
                          "the call's deadline passed before the session started; none was",
                          {.reason = v1::START_DEADLINE_EXCEEDED});
  auto started = sessions_->Start(std::move(c));
  if (!started.ok()) return ToGrpc(started.status(), {.reason = StartFailure(started.status())});
  pipeline::SessionInfo info = (*started)->Info();
  if (CallExpired(ctx)) {
    (void)sessions_->Delete(info.id);
    ++orphans_dropped_;
    Log(kLogNotice, "session %s of %s dropped: the client's deadline passed while it started",
        info.id.c_str(), peer.Describe().c_str());
    return api::MakeError(StatusCode::DEADLINE_EXCEEDED,
                          "the call's deadline passed while the session started; it was removed",
                          {.reason = v1::START_DEADLINE_EXCEEDED});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_[info.id] = {.client_key = peer.client_key(), .target = target};
  }
  Log(kLogNotice, "session %s started by %s on %zu process(es), source %s: %s", info.id.c_str(),
      peer.Describe().c_str(), info.pids.size(),
      std::string(collectors::BranchSourceName(info.source)).c_str(), info.source_reason.c_str());
  Describe(info, resp);
  return grpc::Status::OK;
}

void ProfilerService::Describe(const pipeline::SessionInfo& info, v1::Session* out) const {
  ToProto(info, out);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = held_.find(info.id); it != held_.end()) *out->mutable_target() = it->second.target;
}

api::SessionBounds ProfilerService::SessionBoundsOf(const Limits& l) const {
  api::SessionBounds b;
  b.max_hpt_entries = l.max_hpt_entries;
  b.max_stack_hz = l.max_stack_hz;
  b.max_window_branches = l.max_window_branches;
  b.max_osp_entries = l.max_osp_entries;
  b.max_depth = l.max_depth;
  b.max_pcct_nodes = l.max_pcct_nodes;
  b.max_duration_s = l.max_duration_s;
  b.max_pids_per_session = l.max_pids_per_session;
  std::lock_guard<std::mutex> lock(mu_);
  b.default_step_mode = default_step_mode_;
  return b;
}

// Asks the admission policy (admission.h) over the sessions held now, evicting the peer's own
// ended sessions while it says so. Called with start_mu_ held, so that two starts cannot both
// take the last place.
grpc::Status ProfilerService::MakeRoom(const Peer& peer, uint64_t need_bytes, const Limits& l) {
  const Applicant applicant{
      .admin = peer.admin, .client_key = peer.client_key(), .memory_bound_bytes = need_bytes};
  for (;;) {
    std::vector<HeldSession> held;
    const std::vector<pipeline::SessionInfo> all = sessions_->List();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& info : all) {
        auto it = held_.find(info.id);
        held.push_back({.id = info.id,
                        .mine = it != held_.end() && it->second.client_key == applicant.client_key,
                        .running = info.state == pipeline::SessionState::kRunning,
                        .memory_bound_bytes = info.config.MemoryBoundBytes(),
                        .stopped_unix_ms = info.stopped_unix_ms});
      }
    }
    const AdmissionDecision d = Admit(l, applicant, held);
    if (d.kind == AdmissionDecision::Kind::kAdmit) return grpc::Status::OK;
    if (d.kind == AdmissionDecision::Kind::kRefuse) return d.refusal;
    if (sessions_->Delete(d.evict_id).ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      held_.erase(d.evict_id);
    }
    Log(kLogNotice, "session %s of %s evicted to make room: %s", d.evict_id.c_str(),
        peer.Describe().c_str(), d.reason.c_str());
  }
}

grpc::Status ProfilerService::StopSession(grpc::ServerContext* ctx,
                                          const v1::StopSessionRequest* req, v1::Session* resp) {
  return Run("StopSession", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->name(), "name", &s); !st.ok()) return st;
    auto info = sessions_->Stop(s->id());
    if (!info.ok()) return ToGrpc(info.status());
    Describe(*info, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::GetSession(grpc::ServerContext* ctx, const v1::GetSessionRequest* req,
                                         v1::Session* resp) {
  return Run("GetSession", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->name(), "name", &s); !st.ok()) return st;
    Describe(s->Info(), resp);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::ImportRecording(grpc::ServerContext* ctx,
                                              const v1::ImportRecordingRequest* req,
                                              v1::Session* resp) {
  return Run("ImportRecording", ctx, [&](const Peer& peer) -> grpc::Status {
    // The file is opened with the admin's rights and decoded by an unprivileged helper, but the
    // imported session's symbols are read later from the binaries it names by this process: as
    // with ExportBranchProfile's binary, only an admin may name them.
    if (!peer.admin)
      return api::MakeError(StatusCode::PERMISSION_DENIED,
                            "path: only an admin may name a file for the daemon to read; analyze "
                            "a recording of your own with pathctl analyze or pathctl paths FILE",
                            {.reason = v1::ADMIN_ONLY, .field = "path"});
    if (req->path().empty())
      return InvalidArgument("path is empty (a perf.data or .pbs on this host)", "path",
                             v1::FIELD_REQUIRED);
    pipeline::AnalyzeOptions options;
    options.config.owner_uid = peer.uid;
    // Decoded in the sandboxed helper pathprof-import as the requester (nobody for root): the
    // file and the binaries it names are anybody's bytes (recording_import.h).
    options.decode_in_helper_for = decoders::FileCredentials{peer.uid, peer.gid};
    std::vector<std::string> warnings;
    auto imported = sessions_->Import(req->path(), options, &warnings);
    if (!imported.ok()) return ToGrpc(imported.status());  // its message names the file
    for (const std::string& w : warnings)
      Log(kLogWarning, "import of %s: %s", req->path().c_str(), w.c_str());
    pipeline::SessionInfo info = (*imported)->Info();
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_[info.id] = {.client_key = peer.client_key(), .target = {}};
    }
    Log(kLogNotice, "session %s imported from %s by %s (%zu process(es))", info.id.c_str(),
        req->path().c_str(), peer.Describe().c_str(), info.pids.size());
    ToProto(info, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::DeleteSession(grpc::ServerContext* ctx,
                                            const v1::DeleteSessionRequest* req,
                                            v1::DeleteSessionResponse* resp) {
  return Run("DeleteSession", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->name(), "name", &s); !st.ok()) return st;
    const std::string id = s->id();
    s.reset();
    auto info = sessions_->Delete(id);
    if (!info.ok()) return ToGrpc(info.status());
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.erase(id);
    }
    Log(kLogNotice, "session %s deleted by %s", id.c_str(), peer.Describe().c_str());
    Describe(*info, resp->mutable_deleted());
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::ListSessions(grpc::ServerContext* ctx,
                                           const v1::ListSessionsRequest* req,
                                           v1::ListSessionsResponse* resp) {
  return Run("ListSessions", ctx, [&](const Peer& peer) -> grpc::Status {
    if (grpc::Status s = NonNegative("page_size", req->page_size()); !s.ok()) return s;
    const int32_t page =
        std::min(req->page_size() ? req->page_size() : kDefaultPageSize, kMaxSessionsPage);
    // The token holds the last name of the previous page: sessions come by name, so a page
    // starts after it whatever was started or deleted in between.
    std::string after;
    if (!req->page_token().empty())
      if (grpc::Status s = page_tokens_.Read(req->page_token(), "ListSessions", "", &after);
          !s.ok())
        return s;
    std::vector<pipeline::SessionInfo> all = sessions_->List();
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    for (const auto& info : all) {
      if (!Authorizer::MaySee(peer, info.owner_uid)) continue;
      const std::string name = api::SessionName(info.id);
      if (!after.empty() && name <= after) continue;
      if (resp->sessions_size() >= page) {
        resp->set_next_page_token(page_tokens_.Make(
            "ListSessions", "", resp->sessions(resp->sessions_size() - 1).name()));
        break;
      }
      Describe(info, resp->add_sessions());
    }
    return grpc::Status::OK;
  });
}

api::AnswerScope ProfilerService::ScopeFor(const Peer& peer,
                                           const pipeline::Session& session) const {
  return {.limits = QueryLimitsOf(limits()),
          .hide_kernel = !Authorizer::KernelAddressesVisible(peer),
          .session_id = session.id()};
}

// The query handlers: the caller's session, then the one answer of api/answers.h.
template <typename Request, typename Response>
grpc::Status ProfilerService::AnswerQuery(const char* method, grpc::ServerContext* ctx,
                                          const Request& req, Response* resp) {
  return Run(method, ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req.session(), "session", &s); !st.ok()) return st;
    return api::Answer(*s, req, ScopeFor(peer, *s), resp);
  });
}

grpc::Status ProfilerService::GetHotPaths(grpc::ServerContext* ctx,
                                          const v1::GetHotPathsRequest* req, v1::HotPaths* resp) {
  return AnswerQuery("GetHotPaths", ctx, *req, resp);
}

grpc::Status ProfilerService::GetHotSubpaths(grpc::ServerContext* ctx,
                                             const v1::GetHotSubpathsRequest* req,
                                             v1::HotSubpaths* resp) {
  return AnswerQuery("GetHotSubpaths", ctx, *req, resp);
}

grpc::Status ProfilerService::GetCallingContextTree(grpc::ServerContext* ctx,
                                                    const v1::GetCallingContextTreeRequest* req,
                                                    v1::CallingContextTree* resp) {
  return AnswerQuery("GetCallingContextTree", ctx, *req, resp);
}

grpc::Status ProfilerService::GetHotCallPairs(grpc::ServerContext* ctx,
                                              const v1::GetHotCallPairsRequest* req,
                                              v1::HotCallPairs* resp) {
  return AnswerQuery("GetHotCallPairs", ctx, *req, resp);
}

grpc::Status ProfilerService::GetHotMethods(grpc::ServerContext* ctx,
                                            const v1::GetHotMethodsRequest* req,
                                            v1::HotMethods* resp) {
  return AnswerQuery("GetHotMethods", ctx, *req, resp);
}

grpc::Status ProfilerService::SaveBaseline(grpc::ServerContext* ctx,
                                           const v1::SaveBaselineRequest* req,
                                           v1::SaveBaselineResponse* resp) {
  return Run("SaveBaseline", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->session(), "session", &s); !st.ok()) return st;
    if (req->name().empty() || req->name().size() > 256)
      return InvalidArgument("baseline name must be 1..256 bytes", "name");
    auto n = s->SaveBaseline(req->name());
    if (!n.ok()) return ToGrpc(n.status());
    resp->set_paths(*n);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::GetResidualPaths(grpc::ServerContext* ctx,
                                               const v1::GetResidualPathsRequest* req,
                                               v1::ResidualPaths* resp) {
  return Run("GetResidualPaths", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->session(), "session", &s); !st.ok()) return st;
    uint32_t k;
    if (grpc::Status st = CheckTopK(req->top_k(), &k); !st.ok()) return st;
    if (req->baseline().empty() || req->baseline().size() > 256)
      return InvalidArgument("baseline name must be 1..256 bytes", "baseline");
    auto r = s->ResidualPaths(req->baseline(), k);
    if (!r.ok())
      return ToGrpc(r.status(), {.reason = r.status().code() == ErrorCode::kNotFound
                                               ? v1::BASELINE_NOT_FOUND
                                               : v1::ERROR_REASON_UNSPECIFIED,
                                 .field = "baseline"});
    if (!Authorizer::KernelAddressesVisible(peer)) {
      pipeline::HotPathsResult view;
      view.paths = std::move(r->residual);
      pipeline::HideKernelFrames(&view);
      r->residual = std::move(view.paths);
    }
    api::ToProto(*r, s->id(), resp);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::WatchHotPaths(grpc::ServerContext* ctx,
                                            const v1::WatchHotPathsRequest* req,
                                            grpc::ServerWriter<v1::HotPaths>* writer) {
  return Run("WatchHotPaths", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->query().session(), "query.session", &s); !st.ok())
      return st;
    Limits l = limits();
    using google::protobuf::util::TimeUtil;
    if (req->interval().seconds() < 0 || req->interval().nanos() < 0)
      return InvalidArgument("interval is negative", "interval");
    if (req->interval().seconds() > 3600)
      return InvalidArgument("interval above one hour", "interval");
    int64_t interval_ms = TimeUtil::DurationToMilliseconds(req->interval());
    uint32_t interval = interval_ms ? static_cast<uint32_t>(interval_ms) : 1000;
    if (interval < l.min_watch_interval_ms)
      return api::MakeError(
          StatusCode::INVALID_ARGUMENT,
          "interval " + std::to_string(interval) + " ms is below the server minimum " +
              std::to_string(l.min_watch_interval_ms) + " ms (limits.min_watch_interval_ms)",
          {.reason = v1::BELOW_LIMIT,
           .field = "interval",
           .limit = "limits.min_watch_interval_ms"});
    uint32_t k;
    if (grpc::Status st = CheckTopK(req->query().top_k(), &k); !st.ok()) return st;
    std::string client = peer.client_key();
    if (!streams_.Acquire(client, l.max_streams_per_client, l.max_streams, l.admin_reserved_streams,
                          peer.admin))
      return api::MakeError(
          StatusCode::RESOURCE_EXHAUSTED,
          "too many watch streams (limits.max_streams_per_client " +
              std::to_string(l.max_streams_per_client) + ", limits.max_streams " +
              std::to_string(l.max_streams) +
              (peer.admin ? std::string()
                          : ", of which limits.admin_reserved_streams " +
                                std::to_string(l.admin_reserved_streams) + " are for admins") +
              ")",
          {.reason = v1::QUOTA_EXCEEDED});
    struct Release {
      QuotaCounter* q;
      std::string c;
      ~Release() { q->Release(c); }
    } release{&streams_, client};
    for (;;) {
      if (ctx->IsCancelled()) return ClientGone();
      bool running = s->Info().state == pipeline::SessionState::kRunning;
      v1::HotPaths msg;
      if (grpc::Status st = api::Answer(*s, req->query(), ScopeFor(peer, *s), &msg); !st.ok())
        return st;
      if (!writer->Write(msg)) return ClientGone();
      if (!running) return grpc::Status::OK;  // that was the final report
      std::unique_lock<std::mutex> lock(shutdown_mu_);
      if (shutdown_cv_.wait_for(lock, std::chrono::milliseconds(interval),
                                [&] { return shutting_down_; }))
        return api::MakeError(StatusCode::UNAVAILABLE, "pathprofd is shutting down",
                              {.reason = v1::SHUTTING_DOWN});
    }
  });
}

grpc::Status ProfilerService::ExportProfile(grpc::ServerContext* ctx,
                                            const v1::ExportProfileRequest* req,
                                            v1::ExportProfileResponse* resp) {
  return Run("ExportProfile", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->session(), "session", &s); !st.ok()) return st;
    auto r = s->ExportPprof(req->include_paths(), Authorizer::KernelAddressesVisible(peer));
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_pprof_gzip(std::move(*r));
    // What an OTLP export's resource names (pathctl export --format otlp), as continuous mode
    // labels its windows: this host and the processes profiled.
    {
      std::lock_guard<std::mutex> lock(mu_);
      resp->set_host(host_);
    }
    for (const auto& store : s->Stores()) {
      const pipeline::TargetInfo info = store->Info();
      v1::Target* t = resp->add_processes();
      t->set_pid(static_cast<int32_t>(info.pid));
      t->set_comm(info.comm);
      t->set_executable(info.executable);
    }
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::ExportBranchProfile(grpc::ServerContext* ctx,
                                                  const v1::ExportBranchProfileRequest* req,
                                                  v1::ExportBranchProfileResponse* resp) {
  return Run("ExportBranchProfile", ctx, [&](const Peer& peer) -> grpc::Status {
    std::shared_ptr<pipeline::Session> s;
    if (grpc::Status st = Session(peer, req->session(), "session", &s); !st.ok()) return st;
    decoders::BranchProfileRequest request;
    switch (req->format()) {
      case v1::BRANCH_PROFILE_FORMAT_BOLT_FDATA:
        request.format = decoders::BranchProfileFormat::kBoltFdata;
        break;
      case v1::BRANCH_PROFILE_FORMAT_PERF_LBR:
        request.format = decoders::BranchProfileFormat::kPerfLbr;
        break;
      default:
        return InvalidArgument("format: BRANCH_PROFILE_FORMAT_BOLT_FDATA or _PERF_LBR", "format",
                               req->format() == v1::BRANCH_PROFILE_FORMAT_UNSPECIFIED
                                   ? v1::FIELD_REQUIRED
                                   : v1::FIELD_OUT_OF_RANGE);
    }
    // A path the daemon opens as root: only an admin may name one (others get the target's
    // own executable, which they may already read through /proc).
    if (!req->binary().empty() && !peer.admin) {
      return api::MakeError(grpc::StatusCode::PERMISSION_DENIED,
                            "binary: only an admin may name a file for the daemon to read; leave "
                            "it empty for the target's executable",
                            {.reason = v1::ADMIN_ONLY, .field = "binary"});
    }
    request.binary = req->binary();
    if (grpc::Status st = NonNegative("pid", req->pid()); !st.ok()) return st;
    auto r = s->ExportBranchProfile(std::move(request), req->pid());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_data(std::move(r->data));
    resp->set_counts(r->summary.counts);
    resp->set_windows(r->summary.windows);
    resp->set_binary(r->summary.binary);
    resp->set_images(r->summary.images);
    return grpc::Status::OK;
  });
}

grpc::Status ProfilerService::GetStats(grpc::ServerContext* ctx, const v1::GetStatsRequest* req,
                                       v1::Stats* resp) {
  return Run("GetStats", ctx, [&](const Peer& peer) -> grpc::Status {
    std::vector<std::shared_ptr<pipeline::Session>> chosen;
    if (!req->session().empty()) {
      std::shared_ptr<pipeline::Session> s;
      if (grpc::Status st = Session(peer, req->session(), "session", &s); !st.ok()) return st;
      chosen.push_back(std::move(s));
    } else {
      for (const auto& info : sessions_->List())
        if (Authorizer::MaySee(peer, info.owner_uid))
          if (auto s = sessions_->Get(info.id)) chosen.push_back(std::move(s));
    }
    for (const auto& s : chosen)
      for (const auto& t : s->Stats()) ToProto(t, s->id(), resp->add_targets());
    resp->set_daemon_cpu_seconds(DaemonCpuSeconds());
    resp->set_daemon_rss_bytes(DaemonRssBytes());
    resp->set_streams(streams_.total());
    resp->set_clients(static_cast<uint32_t>(connected_clients_ ? connected_clients_() : 0));
    {
      const Limits l = limits();
      uint64_t bound = 0;
      uint32_t held = 0;
      for (const auto& info : sessions_->List()) {
        bound += info.config.MemoryBoundBytes();
        ++held;
      }
      resp->set_sessions_held(held);
      resp->set_sessions_limit(l.max_sessions);
      resp->set_sessions_memory_bound_bytes(bound);
      resp->set_sessions_memory_limit_bytes(l.max_memory_bytes);
    }
    // Sink addresses and backend error text are the admin's (they name internal hosts and can
    // carry what a backend answered).
    if (continuous_) continuous_->FillStats(resp->mutable_continuous(), peer.admin);
    return grpc::Status::OK;
  });
}

}  // namespace pathprof::daemon
