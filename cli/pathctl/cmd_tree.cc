// pathctl tree SESSION: the partial calling context tree, indented.
#include <cstdio>
#include <map>
#include <string>

#include "pathctl/query_source.h"

namespace pathctl {
namespace {

int RunTree(Args& args) {
  QuerySource source(args, "tree");
  bool json = args.Has("json");
  pathprof::v1::GetCallingContextTreeRequest req;
  req.set_max_depth(static_cast<int32_t>(args.Int("depth")));
  req.set_min_weight(args.Double("min-weight"));
  req.set_root_function(args.Get("root"));
  req.set_max_nodes(static_cast<int32_t>(args.Int("max-nodes")));
  auto problems = args.Problems();
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("tree", problems);
  req.set_session(source.Name(args.positional()[0]));
  pathprof::v1::CallingContextTree resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (json) {
    PrintJson(resp);
  } else {
    PrintTree(resp);
  }
  if (resp.nodes_size() == 0 && !req.root_function().empty())
    std::fprintf(stderr,
                 "pathctl tree: no node of the tree is named '%s' (names are exact: `pathctl "
                 "methods %s` lists the functions sampled)\n",
                 req.root_function().c_str(), args.positional()[0].c_str());
  return resp.nodes_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "tree", "a session's calling context tree (PCCT)",
    "usage: pathctl tree SESSION|RECORDING [--depth N] [--min-weight SHARE] "
    "[--root FUNCTION] [--max-nodes N]\n\n" PATHCTL_QUERY_USAGE,
    Concat({IntFlag("depth", "N", "", 0, 4096, "levels below the roots (default: all)")
                .Sets("max_depth"),
            DoubleFlag("min-weight", "SHARE", "", 0, 1e300,
                       "only nodes with at least SHARE of the total weight")
                .Sets("min_weight"),
            StringFlag("root", "FUNCTION", "", "the subtree under FUNCTION's calls")
                .Sets("root_function"),
            IntFlag("max-nodes", "N", "", 0, kMaxU32, "at most N nodes (default: all)")
                .Sets("max_nodes")},
           ClientFlags()),
    RunTree});

}  // namespace
}  // namespace pathctl
