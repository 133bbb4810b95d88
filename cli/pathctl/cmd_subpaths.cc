// pathctl subpaths SESSION: hot subpaths from the online subpath reservoir.
#include <cstdio>

#include "pathctl/query_source.h"

namespace pathctl {
namespace {

int RunSubpaths(Args& args) {
  QuerySource source(args, "subpaths");
  bool json = args.Has("json");
  pathprof::v1::GetHotSubpathsRequest req;
  req.set_top_k(static_cast<int32_t>(args.Int("top")));
  req.set_threshold(args.Double("threshold"));
  auto problems = args.Problems();
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("subpaths", problems);
  req.set_session(source.Name(args.positional()[0]));
  pathprof::v1::HotSubpaths resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (json) {
    PrintJson(resp);
  } else {
    std::printf("session %s: OSP sampling frequency %.1f\n",
                SessionIdForDisplay(resp.session()).c_str(), resp.sampling_frequency());
    std::printf("%4s %7s %7s %16s %5s  %s\n", "#", "pid", "share", "estimate", "len",
                "first block");
    int i = 0;
    for (const auto& sp : resp.subpaths())
      std::printf("%4d %7u %6.2f%% %16s %5u  %s\n", ++i, sp.pid(), 100 * sp.estimate().share(),
                  EstimateText(sp.estimate()).c_str(), sp.length(),
                  sp.blocks_size() ? LocationText(sp.blocks(0)).c_str() : "-");
  }
  return resp.subpaths_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "subpaths", "a session's hot subpaths (OSP reservoir)",
    "usage: pathctl subpaths SESSION|RECORDING [--top K | --threshold "
    "SHARE]\n\n" PATHCTL_QUERY_USAGE,
    Concat({IntFlag("top", "K", "20", 1, 1000000, "subpaths to list").Sets("top_k"),
            DoubleFlag("threshold", "SHARE", "", 0, 1e12, "only subpaths above SHARE of the total")
                .Sets("threshold")},
           ClientFlags()),
    RunSubpaths});

}  // namespace
}  // namespace pathctl
