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
    std::printf("session %s: %llu samples, total weight %.0f\n",
                SessionIdForDisplay(resp.session()).c_str(),
                static_cast<unsigned long long>(resp.samples()), resp.total_weight());
    std::map<uint64_t, int> depth;  // parents come before children
    for (const auto& n : resp.nodes()) {
      int d = n.parent_id() ? depth[n.parent_id()] + 1 : 0;
      depth[n.id()] = d;
      double pct = resp.total_weight() > 0 ? 100 * n.total_weight() / resp.total_weight() : 0;
      // A context branch windows were attributed to: its id selects its hot paths
      // (pathctl paths SESSION --context ID).
      const std::string windows = n.windows() ? "  {context " + std::to_string(n.context_id()) +
                                                    ": " + std::to_string(n.windows()) + " windows}"
                                              : "";
      std::printf("%6.2f%% %8.0f self %-8.0f %*s%s%s%s\n", pct, n.total_weight(), n.self_weight(),
                  2 * d, "", FunctionText(n.function()).c_str(),
                  n.truncated() ? " [truncated]" : "", windows.c_str());
    }
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
