// pathctl calls SESSION: hot call pairs (call site -> target) from the branch windows.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunCalls(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::GetHotCallPairsRequest req;
  req.set_top_k(static_cast<uint32_t>(args.GetInt("top", 20, 1, 1000000)));
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("calls", problems);
  req.set_session_id(args.positional()[0]);
  pathprof::v1::HotCallPairs resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetHotCallPairs(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("calls", s);
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("session_id").String(resp.session_id()).Key("pairs").BeginArray();
    for (const auto& p : resp.pairs()) {
      w.BeginObject().Key("pid").Uint(p.pid()).Key("call_site");
      LocationJson(w, p.call_site());
      w.Key("target");
      LocationJson(w, p.target());
      w.Key("estimate");
      EstimateJson(w, p.estimate());
      w.EndObject();
    }
    w.EndArray().EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%4s %7s %7s %14s  %-36s %s\n", "#", "pid", "share", "estimate", "call site",
                "target");
    int i = 0;
    for (const auto& p : resp.pairs())
      std::printf("%4d %7u %6.2f%% %14s  %-36s %s\n", ++i, p.pid(), 100 * p.estimate().share(),
                  EstimateText(p.estimate()).c_str(), LocationText(p.call_site()).c_str(),
                  LocationText(p.target()).c_str());
  }
  return resp.pairs_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{"calls",
                        "a session's hot call pairs",
                        "usage: pathctl calls SESSION [--top K]\n\n" PATHCTL_CLIENT_USAGE,
                        {"json"},
                        RunCalls});

}  // namespace
}  // namespace pathctl
