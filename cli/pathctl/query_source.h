// Where a query command (paths, subpaths, tree, calls, methods) gets its answer: from the daemon
// for a SESSION id, or here for a recording (perf.data or .pbs). A recording is read into a
// pipeline::Session (Session::FromRecording, as the daemon's ImportRecording does) and answered
// with the daemon's defaults and the same conversion to v1 messages (pathprof::api), so that the
// same query of the same recording prints the same document either way.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "pathctl/client.h"
#include "pathprof/pipeline/session.h"

namespace pathctl {

// The positional argument of every query command (each command's usage lists it).
#define PATHCTL_QUERY_USAGE                                                                  \
  "  SESSION           a daemon session: its id or sessions/ID (pathctl sessions)\n"         \
  "  RECORDING         a perf.data (LBR or Intel PT) or a .pbs file (a path: it has a '/'\n" \
  "                    or ends in .data or .pbs), answered here exactly as the daemon\n"     \
  "                    answers it once imported (pathctl import); the daemon options\n"      \
  "                    below are for a SESSION\n"

namespace v1 = pathprof::v1;

class QuerySource {
 public:
  // A recording is named by a path: it has a '/' or ends in .pbs or .data (session ids have
  // neither).
  static bool IsRecording(const std::string& arg);

  // Reads the connection flags unless the one positional argument names a recording (then they
  // are left unread, and Problems() reports them as not applying).
  QuerySource(Args& args, std::string command);

  // What a request's `session` field holds for the positional argument: the resource name of
  // a daemon session (`abc` becomes sessions/abc), or the recording's path.
  std::string Name(const std::string& positional) const;

  // Each answers into `out` and returns kExitOk, or prints why not and returns the exit code.
  int Get(const v1::GetHotPathsRequest& req, v1::HotPaths* out);
  int Get(const v1::GetHotSubpathsRequest& req, v1::HotSubpaths* out);
  int Get(const v1::GetCallingContextTreeRequest& req, v1::CallingContextTree* out);
  int Get(const v1::GetHotCallPairsRequest& req, v1::HotCallPairs* out);
  int Get(const v1::GetHotMethodsRequest& req, v1::HotMethods* out);

 private:
  // The daemon's answer: `call(stub, context)` with this command's deadline; a failure is
  // printed and becomes its exit code.
  template <typename Call>
  int Ask(Call call) {
    auto ctx = client_->Context();
    const grpc::Status s = call(client_->stub(), ctx.get());
    return s.ok() ? kExitOk : client_->Fail(command_, s);
  }
  // A request the checks refused (as the daemon would): printed, and its exit code.
  int Refused(const grpc::Status& s) const;
  // The recording's answer, through the daemon's one implementation (api/answers.h).
  template <typename Request, typename Response>
  int AnswerHere(const Request& req, Response* out);
  // The recording's session, read on first use; nullptr after printing why it cannot be.
  const pathprof::pipeline::Session* Recording(const std::string& path);

  std::string command_;
  std::optional<Client> client_;
  std::unique_ptr<pathprof::pipeline::Session> recording_;
  int failed_ = kExitError;  // the exit code of the recording that could not be read
};

}  // namespace pathctl
