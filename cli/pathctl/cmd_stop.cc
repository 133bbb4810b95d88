// pathctl stop ID: stops a session; its profiles stay readable for the retention period.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunStop(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("stop", problems);
  pathprof::v1::StopSessionRequest req;
  req.set_name(SessionNameFromUser(args.positional()[0]));
  pathprof::v1::Session resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().StopSession(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("stop", s);
  if (json) {
    PrintJson(resp);
  } else {
    std::printf("session %s %s\n", SessionIdForDisplay(resp.name()).c_str(),
                SessionStateName(resp.state()));
  }
  return kExitOk;
}

PATHCTL_COMMAND(Command{"stop", "stop a daemon session (its profiles stay readable)",
                        "usage: pathctl stop SESSION", ClientFlags(), RunStop});

}  // namespace
}  // namespace pathctl
