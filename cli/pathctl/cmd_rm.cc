// pathctl rm ID...: deletes sessions (stopping them first if they run) with their profiles, so
// that they no longer count against the caller's quota.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunRm(Args& args) {
  Client client(args);
  const bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().empty()) problems.push_back("expected one or more SESSION ids");
  if (!problems.empty()) return UsageError("rm", problems);
  for (const std::string& id : args.positional()) {
    pathprof::v1::DeleteSessionRequest req;
    req.set_name(SessionNameFromUser(id));
    pathprof::v1::DeleteSessionResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub().DeleteSession(ctx.get(), req, &resp);
    if (!s.ok()) return client.Fail("rm", s);
    if (json)  // one DeleteSessionResponse per line, as each id is deleted
      PrintJson(resp);
    else
      std::printf("session %s deleted (was %s)\n", id.c_str(),
                  SessionStateName(resp.deleted().state()));
  }
  return kExitOk;
}

PATHCTL_COMMAND(Command{"rm",
                        "delete daemon sessions and their profiles (frees the quota they hold)",
                        "usage: pathctl rm SESSION...", ClientFlags(), RunRm});

}  // namespace
}  // namespace pathctl
