#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>
#include <utility>

#include "pathprof/profiles/osp_block_stream.h"
#include "pathprof/profiles/osp_exact.h"
#include "stream_profile_scoring.h"

namespace pathprof::pipeline {
namespace {

// Exact counts of the report's subpaths over the whole stream.
Result<std::vector<uint64_t>> CountExactly(const profiles::OspReport& report,
                                           const OpenBatchesFn& open) {
  std::vector<std::vector<profiles::BlockId>> targets;
  for (const auto& e : report.entries) targets.push_back(e.blocks);
  // One matcher per thread: each thread's blocks are their own stream, as for the samplers.
  std::unordered_map<uint32_t, std::unique_ptr<profiles::SubpathMatcher>> matchers;
  PATHPROF_RETURN_IF_ERROR(ForEachBatch(open, [&](const BranchBatch& b) {
    auto& m = matchers[b.tid];
    if (!m) m = std::make_unique<profiles::SubpathMatcher>(targets);
    if (b.gap_before) m->Gap();
    profiles::ForEachBlock(b, [&](profiles::BlockId id) { m->Feed(id); });
  }));
  std::vector<uint64_t> counts;
  for (const auto& e : report.entries) {
    uint64_t n = 0;
    for (const auto& [tid, m] : matchers) n += m->Count(e.blocks);
    counts.push_back(n);
  }
  return counts;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<SubpathProfile> ScoreSubpaths(profiles::OspReport report, const OpenBatchesFn& open) {
  PATHPROF_ASSIGN_OR_RETURN(auto counts, CountExactly(report, open));
  SubpathProfile r;
  std::vector<double> errors;
  for (size_t i = 0; i < report.entries.size(); ++i) {
    const auto& e = report.entries[i];
    ScoredSubpath row;
    row.entry = e;
    row.exact = counts[i];
    const double truth = static_cast<double>(row.exact);
    row.error = row.exact ? (e.estimated_count - truth) / truth : 0;
    row.within_bound = e.count_low <= truth && truth <= e.count_high;
    r.covered += row.within_bound;
    if (errors.size() < 10) errors.push_back(std::abs(row.error));
    r.rows.push_back(std::move(row));
  }
  r.median_error_top10 = Median(std::move(errors));
  r.report = std::move(report);
  return r;
}

}  // namespace pathprof::pipeline
