// pathctl sessions: the daemon's sessions you may see.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunSessions(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  if (auto p = args.Problems(); !p.empty()) return UsageError("sessions", p);
  // Every page, gathered into one response.
  pathprof::v1::ListSessionsRequest req;
  pathprof::v1::ListSessionsResponse resp;
  do {
    pathprof::v1::ListSessionsResponse page;
    auto ctx = client.Context();
    grpc::Status s = client.stub().ListSessions(ctx.get(), req, &page);
    if (!s.ok()) return client.Fail("sessions", s);
    resp.mutable_sessions()->MergeFrom(page.sessions());
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  if (json) {
    PrintJson(resp);
  } else {
    std::printf("%-10s %-14s %-7s %6s %-20s %s\n", "ID", "STATE", "SOURCE", "OWNER", "PIDS",
                "DETAIL");
    for (const auto& x : resp.sessions()) {
      std::string pids;
      for (int32_t p : x.pids()) pids += (pids.empty() ? "" : ",") + std::to_string(p);
      std::printf("%-10s %-14s %-7s %6d %-20s %s\n", SessionIdForDisplay(x.name()).c_str(),
                  SessionStateName(x.state()), BranchSourceName(x.source()), x.owner_uid(),
                  pids.c_str(), x.error().empty() ? x.source_reason().c_str() : x.error().c_str());
    }
  }
  return resp.sessions_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{"sessions", "list the daemon's sessions", "usage: pathctl sessions",
                        ClientFlags(), RunSessions});

}  // namespace
}  // namespace pathctl
