// pathctl methods SESSION: hot methods, by stack-sample self weight and by entries.
#include <cstdio>

#include "pathctl/query_source.h"

namespace pathctl {
namespace {

int RunMethods(Args& args) {
  QuerySource source(args, "methods");
  bool json = args.Has("json");
  pathprof::v1::GetHotMethodsRequest req;
  req.set_top_k(static_cast<int32_t>(args.Int("top")));
  auto problems = args.Problems();
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("methods", problems);
  req.set_session(source.Name(args.positional()[0]));
  pathprof::v1::HotMethods resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (json) {
    PrintJson(resp);
  } else {
    PrintHotMethods(resp);
  }
  return resp.methods_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "methods", "a session's hot methods",
    "usage: pathctl methods SESSION|RECORDING [--top K]\n\n" PATHCTL_QUERY_USAGE,
    Concat({IntFlag("top", "K", "20", 1, 1000000, "methods to list")}, ClientFlags()), RunMethods});

}  // namespace
}  // namespace pathctl
