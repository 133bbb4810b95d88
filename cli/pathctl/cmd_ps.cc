// pathctl ps: the processes the daemon lets you profile, and the sessions on each.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunPs(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::ListTargetsRequest req;
  req.set_name_filter(args.Get("name"));
  const int64_t limit = args.Int("limit");  // 0: every page
  if (auto p = args.Problems(); !p.empty()) return UsageError("ps", p);
  // The pages, gathered into one response (next_page_token set only where --limit cut it).
  pathprof::v1::ListTargetsResponse resp;
  do {
    if (limit) req.set_page_size(static_cast<int32_t>(limit - resp.targets_size()));
    pathprof::v1::ListTargetsResponse page;
    auto ctx = client.Context();
    grpc::Status s = client.stub().ListTargets(ctx.get(), req, &page);
    if (!s.ok()) return client.Fail("ps", s);
    resp.mutable_targets()->MergeFrom(page.targets());
    resp.set_next_page_token(page.next_page_token());
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty() && (limit == 0 || resp.targets_size() < limit));
  if (json) {
    PrintJson(resp);
  } else {
    std::printf("%7s %6s %-16s %-12s %s\n", "PID", "UID", "COMM", "SESSIONS", "EXECUTABLE");
    for (const auto& t : resp.targets()) {
      std::string sessions;
      for (const auto& name : t.sessions())
        sessions += (sessions.empty() ? "" : ",") + SessionIdForDisplay(name);
      std::printf("%7d %6d %-16s %-12s %s\n", t.pid(), t.uid(), t.comm().c_str(),
                  sessions.empty() ? "-" : sessions.c_str(), t.executable().c_str());
    }
    if (!resp.next_page_token().empty()) std::printf("(more processes match; raise --limit)\n");
  }
  return resp.targets_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "ps", "processes the daemon lets you profile",
    "usage: pathctl ps [--name SUBSTRING] [--limit N]",
    Concat({StringFlag("name", "SUBSTRING", "", "only processes whose command name has SUBSTRING")
                .Sets("name_filter"),
            IntFlag("limit", "N", "", 0, kMaxU32, "at most N processes (default: all)")
                .Sets("page_size")},
           ClientFlags()),
    RunPs});

}  // namespace
}  // namespace pathctl
