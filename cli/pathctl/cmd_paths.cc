// pathctl paths SESSION: the session's hot paths, largest first.
#include <cstdio>

#include "pathctl/query_source.h"
#include "pathprof/api/v1_enums.h"

namespace pathctl {
namespace {
namespace v1 = pathprof::v1;

bool ParseMetric(const std::string& s, v1::Metric* m) {
  return pathprof::api::ParseMetricWord(s, m);
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
  auto problems = args.Problems();
  if (!metric_ok) problems.push_back("--metric is count, instructions, cycles or mispredictions");
  if (args.positional().size() != 1)
    problems.push_back("expected one SESSION id or RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("paths", problems);
  req.set_metric(metric);
  req.set_session(source.Name(args.positional()[0]));
  v1::HotPaths resp;
  if (int rc = source.Get(req, &resp); rc != kExitOk) return rc;
  if (json) {
    PrintJson(resp);
  } else {
    HotPathsTable(resp);
    if (req.with_blocks())
      for (int i = 0; i < resp.paths_size(); ++i) {
        std::printf("path %d:\n", i + 1);
        for (const auto& b : resp.paths(i).blocks())
          std::printf("    %s\n", LocationText(b).c_str());
      }
  }
  return resp.paths_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "paths", "a session's hot paths (path engine)",
    "usage: pathctl paths SESSION|RECORDING [--top K] [--metric count|instructions|"
    "cycles|mispredictions] [--blocks]\n\n" PATHCTL_QUERY_USAGE,
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
                .Sets("with_blocks")},
           ClientFlags()),
    RunPaths});

}  // namespace
}  // namespace pathctl
