// The few pathprofd RPCs pathtop uses, behind a small interface so the fetcher can be driven by
// the real gRPC stub (GrpcClient) against pathprofd or an in-test server.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathtop {

namespace v1 = ::pathprof::v1;
using pathprof::ErrorCode;
using pathprof::Result;
using pathprof::Status;

class Client {
 public:
  virtual ~Client() = default;

  virtual Result<v1::ListTargetsResponse> ListTargets(const v1::ListTargetsRequest& req) = 0;
  virtual Result<v1::ListSessionsResponse> ListSessions() = 0;
  virtual Result<v1::Session> StartSession(const v1::StartSessionRequest& req) = 0;
  virtual Result<v1::Session> StopSession(const std::string& session_name) = 0;
  // Stops the session if it runs and forgets it (its profile and its place in the quotas).
  virtual Result<v1::Session> DeleteSession(const std::string& session_name) = 0;
  virtual Result<v1::HotPaths> GetHotPaths(const v1::GetHotPathsRequest& req) = 0;
  virtual Result<v1::HotSubpaths> GetHotSubpaths(const v1::GetHotSubpathsRequest& req) = 0;
  virtual Result<v1::CallingContextTree> GetCallingContextTree(
      const v1::GetCallingContextTreeRequest& req) = 0;
  virtual Result<v1::HotCallPairs> GetHotCallPairs(const v1::GetHotCallPairsRequest& req) = 0;
  virtual Result<v1::HotMethods> GetHotMethods(const v1::GetHotMethodsRequest& req) = 0;
  virtual Result<v1::Stats> GetStats(const std::string& session_name) = 0;

  // Reads the WatchHotPaths stream, calling on_message for each HotPaths, until the stream ends,
  // fails, or CancelWatch() is called from another thread. Returns how the stream ended.
  virtual Status WatchHotPaths(const v1::WatchHotPathsRequest& req,
                               const std::function<void(const v1::HotPaths&)>& on_message) = 0;
  virtual void CancelWatch() = 0;
};

// `target` is a gRPC target: "unix:/run/pathprof/pathprofd.sock" or "host:port".
// Unary calls time out after `deadline_ms`, so a hung daemon shows as unreachable.
std::unique_ptr<Client> MakeGrpcClient(const std::string& target, int deadline_ms = 3000);

// True for errors that mean "the daemon is not there right now" (retry with backoff), as opposed
// to errors about the request (session gone, permission denied).
bool IsConnectionError(const Status& status);

}  // namespace pathtop
