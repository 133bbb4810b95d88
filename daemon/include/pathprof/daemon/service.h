// pathprof.v1.PathProfiler on top of the pipeline's SessionManager. Every call: identify the peer,
// take a token from its rate bucket, check the request against the limits, check ownership, then
// ask the session. Sessions remember which client started them (for per-client quotas).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pathprof/api/answers.h"
#include "pathprof/api/page_token.h"
#include "pathprof/api/session_request.h"
#include "pathprof/daemon/admission.h"
#include "pathprof/daemon/auth.h"
#include "pathprof/daemon/config.h"
#include "pathprof/daemon/limits.h"
#include "pathprof/pipeline/session_manager.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathprof::daemon {

class ContinuousProfiler;

// Per-method call counts by status code and a latency histogram, for /metrics.
struct RpcMetrics {
  static constexpr double kBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,  0.1,    0.5,   1.0};
  static constexpr size_t kNumBuckets = sizeof(kBuckets) / sizeof(kBuckets[0]);
  std::map<int, uint64_t> by_code;
  uint64_t bucket_counts[kNumBuckets] = {};  // cumulative is computed when rendered
  uint64_t count = 0;
  double sum_seconds = 0;
};

class ProfilerService final : public v1::PathProfiler::Service {
 public:
  ProfilerService(pipeline::SessionManager* sessions, const PeerRegistry* peers,
                  const DaemonConfig& config);
  // Limits, rate limits and the admin group; used at start and on SIGHUP.
  void Configure(const DaemonConfig& config);
  // Ends every WatchHotPaths stream promptly (daemon shutdown).
  void BeginShutdown();

  std::map<std::string, RpcMetrics> rpc_metrics() const;
  uint64_t rate_limited() const { return rate_.refused(); }
  // Sessions removed because the client's deadline passed while they started.
  uint64_t orphans_dropped() const { return orphans_dropped_; }
  uint32_t streams() const { return streams_.total(); }
  pipeline::SessionManager* sessions() const { return sessions_; }
  // How many client connections are open (for GetStats and /metrics).
  void SetClientCounter(std::function<size_t()> f) { connected_clients_ = std::move(f); }
  // Continuous mode, when on (its counters go into GetStats and /metrics). Set before serving.
  void SetContinuous(const ContinuousProfiler* c) { continuous_ = c; }
  const ContinuousProfiler* continuous() const { return continuous_; }

  grpc::Status GetCapabilities(grpc::ServerContext*, const v1::GetCapabilitiesRequest*,
                               v1::Capabilities*) override;
  grpc::Status ListTargets(grpc::ServerContext*, const v1::ListTargetsRequest*,
                           v1::ListTargetsResponse*) override;
  grpc::Status CreateSession(grpc::ServerContext*, const v1::CreateSessionRequest*,
                             v1::Session*) override;
  grpc::Status GetSession(grpc::ServerContext*, const v1::GetSessionRequest*,
                          v1::Session*) override;
  grpc::Status StartSession(grpc::ServerContext*, const v1::StartSessionRequest*,
                            v1::Session*) override;
  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest*,
                             v1::DeleteSessionResponse*) override;
  grpc::Status StopSession(grpc::ServerContext*, const v1::StopSessionRequest*,
                           v1::Session*) override;
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse*) override;
  grpc::Status GetHotPaths(grpc::ServerContext*, const v1::GetHotPathsRequest*,
                           v1::HotPaths*) override;
  grpc::Status GetHotSubpaths(grpc::ServerContext*, const v1::GetHotSubpathsRequest*,
                              v1::HotSubpaths*) override;
  grpc::Status GetCallingContextTree(grpc::ServerContext*, const v1::GetCallingContextTreeRequest*,
                                     v1::CallingContextTree*) override;
  grpc::Status GetHotCallPairs(grpc::ServerContext*, const v1::GetHotCallPairsRequest*,
                               v1::HotCallPairs*) override;
  grpc::Status GetHotMethods(grpc::ServerContext*, const v1::GetHotMethodsRequest*,
                             v1::HotMethods*) override;
  grpc::Status SaveBaseline(grpc::ServerContext*, const v1::SaveBaselineRequest*,
                            v1::SaveBaselineResponse*) override;
  grpc::Status GetResidualPaths(grpc::ServerContext*, const v1::GetResidualPathsRequest*,
                                v1::ResidualPaths*) override;
  grpc::Status WatchHotPaths(grpc::ServerContext*, const v1::WatchHotPathsRequest*,
                             grpc::ServerWriter<v1::HotPaths>*) override;
  grpc::Status ImportRecording(grpc::ServerContext*, const v1::ImportRecordingRequest*,
                               v1::Session*) override;
  grpc::Status ExportProfile(grpc::ServerContext*, const v1::ExportProfileRequest*,
                             v1::ExportProfileResponse*) override;
  grpc::Status ExportBranchProfile(grpc::ServerContext*, const v1::ExportBranchProfileRequest*,
                                   v1::ExportBranchProfileResponse*) override;
  grpc::Status GetStats(grpc::ServerContext*, const v1::GetStatsRequest*, v1::Stats*) override;

 private:
  template <typename F>
  grpc::Status Run(const char* method, grpc::ServerContext* context, F&& body);
  // The session a request names in `field` (sessions/{id}), if the peer may see it.
  grpc::Status Session(const Peer& peer, const std::string& name, const char* field,
                       std::shared_ptr<pipeline::Session>* out) const;
  grpc::Status CheckTopK(int32_t requested, uint32_t* top_k) const;
  // How the peer's queries of `session` are answered (api/answers.h): the server's bounds,
  // kernel frames hidden unless the peer may see them.
  api::AnswerScope ScopeFor(const Peer& peer, const pipeline::Session& session) const;
  template <typename Request, typename Response>
  grpc::Status AnswerQuery(const char* method, grpc::ServerContext* ctx, const Request& req,
                           Response* resp);
  Limits limits() const;
  // How a request spells the fields of SessionTarget and SessionSettings, for errors.
  struct FieldPrefixes {
    std::string target = {};
    std::string settings = {};
  };
  // CreateSession and the deprecated StartSession: resolve the target (session_targets.h),
  // convert the settings (api/session_request.h), admit, start, describe.
  grpc::Status Create(grpc::ServerContext* ctx, const Peer& peer, const v1::SessionTarget& target,
                      const v1::SessionSettings& settings, FieldPrefixes fields, v1::Session* resp);
  // The session as every reply shows it: the pipeline's view, and the target it was created for.
  void Describe(const pipeline::SessionInfo& info, v1::Session* out) const;
  // Create's parts: the request checks' bounds from the limits, and the quotas
  // (admission.h), evicting the peer's own ended sessions to make room.
  api::SessionBounds SessionBoundsOf(const Limits& l) const;
  grpc::Status MakeRoom(const Peer& peer, uint64_t need_bytes, const Limits& l);

  pipeline::SessionManager* sessions_;
  Authorizer auth_;
  RateLimiter rate_;
  std::atomic<uint64_t> orphans_dropped_{0};
  QuotaCounter streams_;

  api::PageTokens page_tokens_;  // signs the lists' page tokens with a key drawn at start

  // guards limits_, held_, metrics_, default_step_mode_, tracer_as_target_, host_
  mutable std::mutex mu_;
  Limits limits_;
  std::string host_;  // HostLabel(config.continuous): the host an export names
  stepping::StepRequest default_step_mode_;  // [ptrace] step_mode (nullopt: auto)
  bool tracer_as_target_ = false;            // [ptrace] tracer_as_target
  // What the daemon knows of a session beyond the pipeline: who started it (per-client quotas)
  // and the target it named (empty for an import).
  struct Held {
    std::string client_key;
    v1::SessionTarget target;
  };
  std::map<std::string, Held> held_;  // by session id
  std::map<std::string, RpcMetrics> metrics_;
  std::mutex start_mu_;  // quota checks and Start happen as one step

  std::function<size_t()> connected_clients_;
  const ContinuousProfiler* continuous_ = nullptr;

  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  bool shutting_down_ = false;
};

}  // namespace pathprof::daemon
