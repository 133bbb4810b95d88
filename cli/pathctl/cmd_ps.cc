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
  req.set_limit(static_cast<uint32_t>(args.GetInt("limit", 0, 0, kMaxU32)));
  if (auto p = args.Problems(); !p.empty()) return UsageError("ps", p);
  pathprof::v1::ListTargetsResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ListTargets(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("ps", s);
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("truncated").Bool(resp.truncated()).Key("targets").BeginArray();
    for (const auto& t : resp.targets()) {
      w.BeginObject();
      w.Key("pid").Uint(t.pid()).Key("uid").Uint(t.uid()).Key("comm").String(t.comm());
      w.Key("executable").String(t.executable()).Key("cgroup").String(t.cgroup());
      w.Key("sessions").BeginArray();
      for (const auto& id : t.session_ids()) w.String(id);
      w.EndArray().EndObject();
    }
    w.EndArray().EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%7s %6s %-16s %-12s %s\n", "PID", "UID", "COMM", "SESSIONS", "EXECUTABLE");
    for (const auto& t : resp.targets()) {
      std::string sessions;
      for (const auto& id : t.session_ids()) sessions += (sessions.empty() ? "" : ",") + id;
      std::printf("%7u %6u %-16s %-12s %s\n", t.pid(), t.uid(), t.comm().c_str(),
                  sessions.empty() ? "-" : sessions.c_str(), t.executable().c_str());
    }
    if (resp.truncated()) std::printf("(more processes match; raise --limit)\n");
  }
  return resp.targets_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{"ps",
                        "processes the daemon lets you profile",
                        "usage: pathctl ps [--name SUBSTRING] [--limit N]\n\n" PATHCTL_CLIENT_USAGE,
                        {"json"},
                        RunPs});

}  // namespace
}  // namespace pathctl
