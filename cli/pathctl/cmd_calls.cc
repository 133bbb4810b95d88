// pathctl calls SESSION: hot call pairs (call site -> target) from the branch windows.
#include <cstdio>

#include "pathctl/query_source.h"

namespace pathctl {
namespace {

int RunCalls(Args& args) {
  QuerySource source(args, "calls");
  bool json = args.Has("json");
  pathprof::v1::GetHotCallPairsRequest req;
  req.set_top_k(static_cast<int32_t>(args.Int("top")));
  auto problems = args.Problems();
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("calls", problems);
  req.set_session(source.Name(args.positional()[0]));
  pathprof::v1::HotCallPairs resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (json) {
    PrintJson(resp);
  } else {
    PrintHotCallPairs(resp);
  }
  return resp.pairs_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "calls", "a session's hot call pairs",
    "usage: pathctl calls SESSION|RECORDING [--top K]\n\n" PATHCTL_QUERY_USAGE,
    Concat({IntFlag("top", "K", "20", 1, 1000000, "call pairs to list")}, ClientFlags()),
    RunCalls});

}  // namespace
}  // namespace pathctl
