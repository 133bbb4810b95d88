// pathctl as a pathprofd client: where to connect (--socket / --address / $PATHPROF_SOCKET),
// and turning a gRPC status into a message a person can act on and an exit code a script can test.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "pathctl/command.h"
#include "pathctl/printers.h"  // every command prints what it got
#include "pathprof/api/resource_names.h"
#include "pathprof/core/status.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathctl {

// Commands take a session as its id or as sessions/ID, and show the id.
using pathprof::api::SessionIdForDisplay;
using pathprof::api::SessionNameFromUser;

// The flags every daemon command takes: where the daemon is, how long to wait, --json.
std::vector<Flag> ClientFlags();

class Client {
 public:
  // Reads --socket/--address/--tls-*/--timeout from args; a --tls-* flag without --address, or
  // a --tls-* file that cannot be read, is a usage problem (args.Problems()).
  explicit Client(Args& args);
  // True when the user named a daemon (--socket, --address or $PATHPROF_SOCKET).
  bool explicitly_chosen() const { return explicit_; }
  pathprof::v1::PathProfiler::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  // A context with the deadline set.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // Prints "pathctl CMD: <helpful message>" and returns the exit code for `status`.
  int Fail(const std::string& command, const grpc::Status& status) const;
  const std::string& target() const { return target_; }
  double timeout_s() const { return timeout_s_; }

 private:
  std::string target_;
  bool explicit_ = false;
  bool tcp_ = false;
  double timeout_s_ = 10;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pathprof::v1::PathProfiler::Stub> stub_;
};

// The one gRPC code -> exit code mapping (command.h's ExitCode), for the daemon's failures and,
// through api::ToGrpcCode, for those met here: a missing file exits 6 whoever met it.
int ExitCodeFor(grpc::StatusCode code);
// Prints "pathctl COMMAND: <status>" and returns its exit code (a failure met here, not by the
// daemon).
int FailLocal(const std::string& command, const pathprof::Status& status);

}  // namespace pathctl
