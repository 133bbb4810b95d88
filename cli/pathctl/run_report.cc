#include "pathctl/run_report.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/report_text.h"
#include "pathprof/api/convert.h"
#include "pathprof/v1/reports.pb.h"

namespace pathctl {
namespace {

namespace pl = pathprof::pipeline;

void PrintHeader(const RunResults& r) {
  std::printf("pathctl run: session %s, pid", r.info.id.c_str());
  for (uint32_t p : r.info.pids) std::printf(" %u", p);
  std::printf(", %s", std::string(pl::SessionStateName(r.info.state)).c_str());
  if (r.exit_status >= 0) std::printf(" (exit status %d)", r.exit_status);
  std::printf("\n  branches: %s\n  stacks:   %s\n", r.info.source_reason.c_str(),
              r.info.stacks_reason.c_str());
}

void PrintHotPaths(const RunResults& r) {
  PrintHotPathsText(r.paths);
  if (r.paths.paths.empty()) std::printf("  (none: no branch windows were collected)\n");
}

void PrintSubpathsPairsAndMethods(const RunResults& r) {
  PrintHotSubpathsText(r.subpaths);
  PrintHotCallPairsText(r.pairs);
  std::printf("\nhot methods (self from stacks, entries from branch windows):\n");
  for (const pl::HotMethod& m : r.methods.methods)
    std::printf("  %5.1f%% self  %5.1f%% entries  %s\n", 100 * m.self.share, 100 * m.entries.share,
                m.function.ToString().c_str());
}

void PrintTree(const RunResults& r) {
  std::printf("\ncalling context tree (%llu samples; total share, self share):\n",
              static_cast<unsigned long long>(r.cct.samples));
  std::vector<int> depth_of(r.cct.nodes.size() + 1, 0);
  std::vector<uint64_t> ids;
  for (const pl::CctNode& n : r.cct.nodes) {
    int depth = 0;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == n.parent_id) depth = depth_of[i] + 1;
    ids.push_back(n.id);
    depth_of[ids.size() - 1] = depth;
  }
  // Depth-first for printing (the result is breadth-first).
  std::vector<size_t> order;
  std::vector<std::pair<uint64_t, size_t>> todo;
  for (size_t i = r.cct.nodes.size(); i-- > 0;)
    if (r.cct.nodes[i].parent_id == 0) todo.push_back({r.cct.nodes[i].id, i});
  while (!todo.empty()) {
    auto [id, i] = todo.back();
    todo.pop_back();
    order.push_back(i);
    for (size_t j = r.cct.nodes.size(); j-- > 0;)
      if (r.cct.nodes[j].parent_id == id) todo.push_back({r.cct.nodes[j].id, j});
  }
  const double total = r.cct.total_weight > 0 ? r.cct.total_weight : 1;
  for (size_t i : order) {
    const pl::CctNode& n = r.cct.nodes[i];
    std::printf("  %5.1f%% %5.1f%% %*s%s\n", 100 * n.total_weight / total,
                100 * n.self_weight / total, 2 * depth_of[i], "", n.function.ToString().c_str());
  }
}

void PrintAccounting(const RunResults& r) {
  std::printf("\naccounting:\n");
  for (const pl::TargetStats& t : r.stats) {
    std::printf(
        "  pid %u: %llu stack samples, %llu windows, %llu branches, pipeline CPU %.3f s, "
        "~%llu KiB\n",
        t.pid, static_cast<unsigned long long>(t.stack_samples),
        static_cast<unsigned long long>(t.windows), static_cast<unsigned long long>(t.branches),
        t.pipeline_cpu_seconds, static_cast<unsigned long long>(t.memory_bytes / 1024));
    if (t.namespace_pid != 0)
      std::printf("    pid %u in its own pid namespace (a container)\n", t.namespace_pid);
    if (!t.window_weighting.empty())
      std::printf("    windows weighted by %s\n", t.window_weighting.c_str());
    for (const auto& [k, v] : t.drops)
      std::printf("    dropped %-28s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    for (const auto& [k, v] : t.decode_errors)
      std::printf("    decode error %-23s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  }
}

}  // namespace

RunResults CollectRunResults(const pl::Session& session, uint32_t top, int exit_status) {
  RunResults r;
  r.exit_status = exit_status;
  r.info = session.Info();
  pl::HotPathsQuery hq;
  hq.top_k = top;
  r.paths = session.HotPaths(hq);
  pl::HotSubpathsQuery sq;
  sq.top_k = top;
  r.subpaths = session.HotSubpaths(sq);
  r.pairs = session.HotCallPairs(top);
  r.methods = session.HotMethods(top);
  // The top of the tree: what a terminal shows, not every leaf.
  pl::CctQuery cq;
  cq.max_depth = 24;
  cq.min_weight = 0.02;
  cq.max_nodes = 200;
  r.cct = session.Cct(cq);
  r.stats = session.Stats();
  return r;
}

void PrintRunText(const RunResults& r) {
  PrintHeader(r);
  PrintHotPaths(r);
  PrintSubpathsPairsAndMethods(r);
  PrintTree(r);
  PrintAccounting(r);
}

// The session is pathctl's own, not a daemon resource, so neither it nor its answers are named.
void PrintRunJson(const RunResults& r) {
  pathprof::v1::RunReport out;
  pathprof::api::ToProto(r.info, out.mutable_session());
  out.mutable_session()->clear_name();
  out.set_exit_status(r.exit_status);
  pathprof::api::ToProto(r.paths, "", out.mutable_hot_paths());
  pathprof::api::ToProto(r.subpaths, "", r.subpaths.subpaths.size(), out.mutable_hot_subpaths());
  pathprof::api::ToProto(r.pairs, "", out.mutable_hot_call_pairs());
  pathprof::api::ToProto(r.methods, "", out.mutable_hot_methods());
  pathprof::api::ToProto(r.cct, "", out.mutable_cct());
  for (const pl::TargetStats& t : r.stats) pathprof::api::ToProto(t, "", out.add_stats());
  PrintJson(out);
}

}  // namespace pathctl
