// pathctl tree SESSION: the partial calling context tree, indented.
#include <cstdio>
#include <map>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunTree(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::GetCallingContextTreeRequest req;
  req.set_max_depth(static_cast<uint32_t>(args.GetInt("depth", 0, 0, 4096)));
  req.set_min_weight(args.GetDouble("min-weight", 0, 0, 1e300));
  req.set_root_function(args.Get("root"));
  req.set_max_nodes(static_cast<uint32_t>(args.GetInt("max-nodes", 0, 0, kMaxU32)));
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("tree", problems);
  req.set_session_id(args.positional()[0]);
  pathprof::v1::CallingContextTree resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetCallingContextTree(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("tree", s);
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("session_id").String(resp.session_id());
    w.Key("total_weight").Double(resp.total_weight()).Key("samples").Uint(resp.samples());
    w.Key("nodes").BeginArray();
    for (const auto& n : resp.nodes()) {
      w.BeginObject().Key("id").Uint(n.id()).Key("parent_id").Uint(n.parent_id());
      w.Key("pid").Uint(n.pid()).Key("function");
      LocationJson(w, n.function());
      w.Key("call_site");
      LocationJson(w, n.call_site());
      w.Key("self_weight").Double(n.self_weight()).Key("total_weight").Double(n.total_weight());
      w.Key("edge_weight").Double(n.edge_weight()).Key("truncated").Bool(n.truncated());
      w.EndObject();
    }
    w.EndArray().EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("session %s: %llu samples, total weight %.0f\n", resp.session_id().c_str(),
                static_cast<unsigned long long>(resp.samples()), resp.total_weight());
    std::map<uint64_t, int> depth;  // parents come before children
    for (const auto& n : resp.nodes()) {
      int d = n.parent_id() ? depth[n.parent_id()] + 1 : 0;
      depth[n.id()] = d;
      double pct = resp.total_weight() > 0 ? 100 * n.total_weight() / resp.total_weight() : 0;
      std::printf("%6.2f%% %8.0f self %-8.0f %*s%s%s\n", pct, n.total_weight(), n.self_weight(),
                  2 * d, "",
                  n.function().function().empty() ? LocationText(n.function()).c_str()
                                                  : n.function().function().c_str(),
                  n.truncated() ? " [truncated]" : "");
    }
  }
  return resp.nodes_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{"tree",
                        "a session's calling context tree (PCCT)",
                        "usage: pathctl tree SESSION [--depth N] [--min-weight SHARE] "
                        "[--root FUNCTION] [--max-nodes N]\n\n" PATHCTL_CLIENT_USAGE,
                        {"json"},
                        RunTree});

}  // namespace
}  // namespace pathctl
