#include "pathctl/run_report.h"

#include <cstdio>

#include "pathctl/printers.h"
#include "pathprof/api/answers.h"
#include "pathprof/api/convert.h"

namespace pathctl {

namespace v1 = pathprof::v1;

// The session is pathctl's own, not a daemon resource, so neither it nor its answers are named
// (the scope's empty session id), and nothing is hidden from the user who ran it.
v1::RunReport MakeRunReport(const pathprof::pipeline::Session& session, uint32_t top,
                            int exit_status) {
  v1::RunReport out;
  pathprof::api::ToProto(session.Info(), out.mutable_session());
  out.mutable_session()->clear_name();
  out.set_exit_status(exit_status);
  const pathprof::api::AnswerScope scope;
  const int32_t k = static_cast<int32_t>(top);
  // The requests check nothing a run could get wrong (top is in range), so every answer is OK.
  v1::GetHotPathsRequest paths;
  paths.set_top_k(k);
  paths.set_with_blocks(true);
  (void)pathprof::api::Answer(session, paths, scope, out.mutable_hot_paths());
  v1::GetHotSubpathsRequest subpaths;
  subpaths.set_top_k(k);
  (void)pathprof::api::Answer(session, subpaths, scope, out.mutable_hot_subpaths());
  v1::GetHotCallPairsRequest pairs;
  pairs.set_top_k(k);
  (void)pathprof::api::Answer(session, pairs, scope, out.mutable_hot_call_pairs());
  v1::GetHotMethodsRequest methods;
  methods.set_top_k(k);
  (void)pathprof::api::Answer(session, methods, scope, out.mutable_hot_methods());
  // The top of the tree: what a terminal shows, not every leaf.
  v1::GetCallingContextTreeRequest tree;
  tree.set_max_depth(24);
  tree.set_min_weight(0.02);
  tree.set_max_nodes(200);
  (void)pathprof::api::Answer(session, tree, scope, out.mutable_cct());
  for (const auto& t : session.Stats()) pathprof::api::ToProto(t, "", out.add_stats());
  return out;
}

void PrintRunText(const v1::RunReport& r) {
  const v1::Session& s = r.session();
  std::printf("pathctl run: pid");
  for (int32_t p : s.pids()) std::printf(" %d", p);
  std::printf(", %s", SessionStateName(s.state()));
  if (r.exit_status() >= 0) std::printf(" (exit status %d)", r.exit_status());
  // The reason says why this branch source, and why no stacks where there are none.
  std::printf("\n  source: %s\n", s.source_reason().c_str());
  PrintReportTables(r.hot_paths(), r.hot_subpaths(), r.hot_call_pairs(), r.hot_methods(),
                    "hot methods (self from stacks, entries from branch windows)");
  std::printf("\ncalling context tree:\n");
  PrintTree(r.cct());
  std::printf("\naccounting:\n");
  PrintTargetStats(r.stats());
}

}  // namespace pathctl
