// pathctl as a pathprofd client: where to connect (--socket / --address / $PATHPROF_SOCKET),
// and turning a gRPC status into a message a person can act on and an exit code a script can test.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "pathctl/command.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/core/status.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathctl {

// Commands take a session as its id or as sessions/ID, and show the id.
using pathprof::api::SessionIdForDisplay;
using pathprof::api::SessionNameFromUser;

constexpr const char* kDefaultSocket = "/run/pathprof/pathprofd.sock";

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

// Output helpers shared by the query commands.
// A v1 message as protobuf's JSON mapping (proto field names, every field printed, 64-bit
// integers as strings, enums by name), one line: what every daemon command's --json prints,
// and a query's answered here from a recording: the same document of the same message type.
void PrintJson(const google::protobuf::Message& message);
std::string LocationText(const pathprof::v1::Location& l);  // "func+0x1a (file.c:12)"
// A function as hot methods name it: its name alone ("func", "memcmp@plt", "zstd+0x97210"),
// the address and image where it has none.
std::string FunctionText(const pathprof::v1::Location& l);
std::string EstimateText(const pathprof::v1::Estimate& e);  // "1234 ±56" or "1234"
const char* SessionStateName(pathprof::v1::SessionState s);
const char* BranchSourceName(pathprof::v1::BranchSource s);
// The paths as a table under a line saying how they were obtained (`how`; default: the estimator).
void HotPathsTable(const pathprof::v1::HotPaths& hp, const std::string& how = "");

}  // namespace pathctl
