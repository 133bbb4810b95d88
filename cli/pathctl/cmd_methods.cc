// pathctl methods SESSION: hot methods, by stack-sample self weight and by entries.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunMethods(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::GetHotMethodsRequest req;
  req.set_top_k(static_cast<uint32_t>(args.GetInt("top", 20, 1, 1000000)));
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("methods", problems);
  req.set_session_id(args.positional()[0]);
  pathprof::v1::HotMethods resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetHotMethods(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("methods", s);
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("session_id").String(resp.session_id()).Key("methods").BeginArray();
    for (const auto& m : resp.methods()) {
      w.BeginObject().Key("pid").Uint(m.pid()).Key("function");
      LocationJson(w, m.function());
      w.Key("self");
      EstimateJson(w, m.self());
      w.Key("entries");
      EstimateJson(w, m.entries());
      w.EndObject();
    }
    w.EndArray();
    w.Key("hot_data_streams_unsupported").String(resp.hot_data_streams_unsupported());
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%4s %7s %7s %12s %14s  %s\n", "#", "pid", "self%", "self", "entries", "function");
    int i = 0;
    for (const auto& m : resp.methods())
      std::printf("%4d %7u %6.2f%% %12s %14s  %s\n", ++i, m.pid(), 100 * m.self().share(),
                  EstimateText(m.self()).c_str(), EstimateText(m.entries()).c_str(),
                  LocationText(m.function()).c_str());
    if (!resp.hot_data_streams_unsupported().empty())
      std::printf("(hot data streams: %s)\n", resp.hot_data_streams_unsupported().c_str());
  }
  return resp.methods_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{"methods",
                        "a session's hot methods",
                        "usage: pathctl methods SESSION [--top K]\n\n" PATHCTL_CLIENT_USAGE,
                        {"json"},
                        RunMethods});

}  // namespace
}  // namespace pathctl
