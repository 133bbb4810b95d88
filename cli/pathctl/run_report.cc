#include "pathctl/run_report.h"

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "pathctl/printers.h"
#include "pathprof/api/answers.h"
#include "pathprof/api/convert.h"

namespace pathctl {

namespace v1 = pathprof::v1;

// The session is pathctl's own, not a daemon resource, so neither it nor its answers are named
// (the scope's empty session id), and nothing is hidden from the user who ran it.
v1::RunReport MakeRunReport(const pathprof::pipeline::Session& session,
                            pathprof::pipeline::SymbolService& symbols, uint32_t top,
                            int exit_status, bool function_lines) {
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
  // Paths, subpaths and call pairs print their blocks' lines; methods and the tree print names.
  symbols.SetSourceLines(function_lines);
  v1::GetHotMethodsRequest methods;
  methods.set_top_k(k);
  (void)pathprof::api::Answer(session, methods, scope, out.mutable_hot_methods());
  // The top of the tree: what a terminal shows, not every leaf.
  v1::GetCallingContextTreeRequest tree;
  tree.set_max_depth(24);
  tree.set_min_weight(0.02);
  tree.set_max_nodes(200);
  (void)pathprof::api::Answer(session, tree, scope, out.mutable_cct());
  symbols.SetSourceLines(true);
  for (const auto& t : session.Stats()) pathprof::api::ToProto(t, "", out.add_stats());
  return out;
}

namespace {

// Where the work was, when the target itself did (next to) none of it: a shell that waited for
// `xz`, a launcher, make. Its children's rows are then the whole report, which is said so that
// the tables are not read as the target's; with children not followed the report is empty, and
// the way to fill it is said. Work is counted in stack samples (in branch windows where no
// process has any): a target with under 1 in 20 of them did next to none (a shell's start-up
// may take a sample or two).
void PrintWhereTheWorkWas(const v1::RunReport& r) {
  const v1::Session& s = r.session();
  const std::set<int32_t> targets(s.pids().begin(), s.pids().end());
  uint64_t samples = 0, windows = 0;
  for (const v1::TargetStats& t : r.stats()) {
    samples += t.stack_samples();
    windows += t.windows();
  }
  const bool by_samples = samples > 0;
  const char* unit = by_samples ? "stack samples" : "branch windows";
  uint64_t all = 0, target = 0;
  std::string children;
  for (const v1::TargetStats& t : r.stats()) {
    const uint64_t work = by_samples ? t.stack_samples() : t.windows();
    all += work;
    if (targets.count(t.pid()))
      target += work;
    else if (work > 0)
      children += (children.empty() ? "" : ", ") + std::to_string(t.pid());
  }
  std::string who = "pid";
  for (int32_t p : s.pids()) who += " " + std::to_string(p);
  if (!children.empty() && target * 20 < all) {
    std::printf(
        "  note: %s did next to no work itself (%llu of %llu %s); the processes it "
        "forked did the rest (pids %s): the tables below are theirs%s\n",
        who.c_str(), static_cast<unsigned long long>(target), static_cast<unsigned long long>(all),
        unit, children.c_str(),
        s.source() == v1::BRANCH_SOURCE_NONE || !by_samples
            ? ""
            : ", from stack samples alone (branch windows are taken of the target only)");
  } else if (children.empty() && all == 0 && !s.settings().follow_children()) {
    std::printf(
        "  note: %s did no work (0 stack samples, 0 branch windows), and the processes "
        "it forked were not profiled (--no-inherit): drop --no-inherit to follow them\n",
        who.c_str());
  }
}

}  // namespace

void PrintRunText(const v1::RunReport& r) {
  const v1::Session& s = r.session();
  std::printf("pathctl run: pid");
  for (int32_t p : s.pids()) std::printf(" %d", p);
  std::printf(", %s", SessionStateName(s.state()));
  if (r.exit_status() >= 0) std::printf(" (exit status %d)", r.exit_status());
  // The reason says why this branch source, and why no stacks where there are none.
  // The source by its word, then why (the reason never repeats the word), with the step mode.
  std::printf("\n  source: %s: %s\n", BranchSourceName(s.source()), s.source_reason().c_str());
  PrintWhereTheWorkWas(r);
  PrintReportTables(r.hot_paths(), r.hot_subpaths(), r.hot_call_pairs(), r.hot_methods(),
                    "hot methods (self from stacks, entries from branch windows)");
  std::printf("\ncalling context tree:\n");
  PrintTree(r.cct());
  std::printf("\naccounting:\n");
  PrintTargetStats(r.stats());
}

}  // namespace pathctl
