// pathctl paths SESSION: the session's hot paths, largest first.
#include <algorithm>
#include <cstdio>
#include <string>

#include "pathctl/query_source.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathctl {
namespace {
namespace v1 = pathprof::v1;

bool ParseMetric(const std::string& s, v1::Metric* m) {
  return pathprof::api::ParseMetricWord(s, m);
}

// --context NODE_ID (a context_id from `pathctl tree`) or FUNC;FUNC... (root side first).
bool ParseContext(const std::string& s, v1::ContextSelector* c) {
  if (s.empty()) return false;
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    if (s.size() > 18) return false;
    c->set_node(std::stoll(s));
    return c->node() > 0;
  }
  for (size_t at = 0; at <= s.size();) {
    const size_t end = std::min(s.find(';', at), s.size());
    if (end == at) return false;  // an empty name
    c->add_functions(s.substr(at, end - at));
    at = end + 1;
  }
  return true;
}

std::string ContextText(const v1::PathContext& c) {
  std::string out = c.truncated() ? "[truncated] > " : "";
  for (int i = 0; i < c.functions_size(); ++i) {
    if (i) out += " > ";
    const std::string& f = c.functions(i).function();
    out += f.empty() ? LocationText(c.functions(i)) : f;
  }
  return out;
}

// The contexts the path at `rank` was seen in, heaviest first.
void PrintContextsOf(const v1::HotPaths& resp, int rank) {
  const v1::HotPath& p = resp.paths(rank - 1);
  std::printf(
      "contexts of path %d (%s, len %u, %s): %d\n", rank, LocationText(p.start()).c_str(),
      p.length(),
      pathprof::hwmodel::FormatOutcomes(p.outcomes(), p.length(), pathprof::hwmodel::kTakenNotTaken)
          .c_str(),
      p.contexts_size());
  std::printf("%7s %16s %8s %10s  %s\n", "share", "estimate", "seen", "context_id", "context");
  for (const auto& c : p.contexts())
    std::printf("%6.2f%% %16s %8lld %10lld  %s\n", 100 * c.estimate().share(),
                EstimateText(c.estimate()).c_str(), static_cast<long long>(c.observations()),
                static_cast<long long>(c.context_id()), ContextText(c).c_str());
}

int RunPaths(Args& args) {
  QuerySource source(args, "paths");
  bool json = args.Has("json");
  v1::GetHotPathsRequest req;
  req.set_top_k(static_cast<int32_t>(args.Int("top")));
  req.set_with_blocks(args.Has("blocks"));
  v1::Metric metric = v1::METRIC_COUNT;
  // --metric is read before Problems(): a flag not yet read counts as one that "does not
  // apply", which refused every --metric.
  const bool metric_ok = ParseMetric(args.Get("metric"), &metric);
  const std::string context = args.Get("context");
  const bool context_ok = context.empty() || ParseContext(context, req.mutable_context());
  if (!context.empty())
    req.mutable_context()->set_pid(static_cast<int32_t>(args.Int("context-pid")));
  const int contexts_of = static_cast<int>(args.Int("contexts-of"));
  if (contexts_of > 0) {
    req.set_contexts_per_path(static_cast<int32_t>(args.Int("contexts")));
    req.set_top_k(std::max(req.top_k(), contexts_of));
  }
  auto problems = args.Problems();
  if (!context_ok)
    problems.push_back(
        "--context is a context_id from `pathctl tree` (a number above 0) or "
        "function names, root side first, separated by ';' (e.g. 'caller_a;loop')");
  if (!metric_ok) problems.push_back("--metric is count, instructions, cycles or mispredictions");
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("paths", problems);
  req.set_metric(metric);
  req.set_session(source.Name(args.positional()[0]));
  v1::HotPaths resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (req.has_context() && resp.contexts_matched() == 0) {
    std::fprintf(stderr,
                 "pathctl paths: no branch window was attributed to context %s (yet): "
                 "`pathctl tree SESSION` lists the contexts with their windows\n",
                 context.c_str());
    return kExitNoData;
  }
  if (contexts_of > 0) {
    if (resp.paths_size() < contexts_of) {
      std::fprintf(stderr, "pathctl paths: --contexts-of %d: the session has %d paths\n",
                   contexts_of, resp.paths_size());
      return kExitNoData;
    }
    if (json)
      PrintJson(resp.paths(contexts_of - 1));
    else
      PrintContextsOf(resp, contexts_of);
    return kExitOk;
  }
  if (json) {
    PrintJson(resp);
  } else {
    if (req.has_context())
      std::printf("context %s: %lld contexts, %lld branch windows\n", context.c_str(),
                  static_cast<long long>(resp.contexts_matched()),
                  static_cast<long long>(resp.context_windows()));
    PrintHotPaths(resp);
    if (req.with_blocks()) PrintPathBlocks(resp);
  }
  return resp.paths_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "paths", "a session's hot paths (path engine)",
    "usage: pathctl paths SESSION|RECORDING [--top K] [--metric count|instructions|"
    "cycles|mispredictions] [--blocks]\n"
    "       [--context CONTEXT_ID|'FUNC;FUNC...' [--context-pid PID]] "
    "[--contexts-of RANK [--contexts N]]\n\n"
    "--context: the hot paths of the branch windows attributed to one calling context: a\n"
    "  context_id from `pathctl tree` (that context and those below it), or the functions of\n"
    "  a context's innermost frames, root side first ('caller_a;loop'); --context-pid picks\n"
    "  the process where the session has several.\n"
    "--contexts-of RANK: the calling contexts the path at RANK was seen in, heaviest first\n"
    "  (at most --contexts N).\n\n" PATHCTL_QUERY_USAGE,
    Concat({IntFlag("top", "K", "20", 1, 1000000, "paths to list"),
            WordsFlag("metric", {"count", "instructions", "cycles", "mispredictions"}, "count",
                      "what a path weighs: its count, or the instructions, cycles or "
                      "mispredictions of its executions")
                .Accepts([](const std::string& s) {
                  v1::Metric m;
                  return ParseMetric(s, &m);
                })
                .Sets("metric"),
            BoolFlag("blocks", "each path's blocks, with their functions and lines")
                .Sets("with_blocks"),
            StringFlag("context", "CONTEXT", "",
                       "only the windows attributed to this calling context (a context_id "
                       "from `pathctl tree`, or 'FUNC;FUNC', root side first)")
                .Sets("context"),
            IntFlag("context-pid", "PID", "", 0, kMaxPid,
                    "with --context: the process the context is in (sessions of several)")
                .Sets("context.pid"),
            IntFlag("contexts-of", "RANK", "", 1, 1000000,
                    "the calling contexts the path at RANK was seen in, heaviest first"),
            IntFlag("contexts", "N", "20", 1, 1000000, "with --contexts-of: contexts to list")
                .Sets("contexts_per_path")},
           ClientFlags()),
    RunPaths});

}  // namespace
}  // namespace pathctl
