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
    PrintHotSubpaths(resp);
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
