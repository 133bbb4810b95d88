#include "pathprof/pipeline/hpt_sweep.h"

#include <utility>

#include "pathprof/profiles/accuracy.h"
#include "sim_scoring.h"

namespace pathprof::pipeline {
namespace {

using hwmodel::CompletedPath;

// One geometry: a table over the whole stream and one over the current dynamic window.
struct Table {
  hwmodel::HotPathTableConfig config;
  std::optional<hwmodel::HotPathTable> hpt, window_hpt;
  profiles::DynamicOverlap dynamic;
  double overlap = 0;
};

std::vector<Table> MakeTables(const HptSweepOptions& options) {
  std::vector<Table> tables;
  for (uint32_t e : options.sizes) {
    for (uint32_t w : options.ways) {
      Table t;
      t.config = options.base;
      t.config.entries = e;
      t.config.ways = w;
      if (w > e || !t.config.Validate().ok()) continue;  // e.g. 2 sets of 128x128
      t.hpt.emplace(hwmodel::HotPathTable::Create(t.config).value());
      t.window_hpt.emplace(hwmodel::HotPathTable::Create(t.config).value());
      tables.push_back(std::move(t));
    }
  }
  return tables;
}

HptSweepResult Collect(const std::vector<Table>& tables, size_t paths_distinct) {
  HptSweepResult r;
  r.paths_distinct = paths_distinct;
  for (const auto& t : tables) {
    HptSweepCell c;
    c.config = t.config;
    c.overlap = t.overlap;
    c.dynamic_overlap = t.dynamic.AveragePercent();
    c.dynamic_windows = t.dynamic.windows();
    r.cells.push_back(c);
  }
  return r;
}

}  // namespace

std::optional<HptSweepCell> HptSweepResult::Find(uint32_t entries, uint32_t ways) const {
  for (const auto& c : cells)
    if (c.config.entries == entries && c.config.ways == ways) return c;
  return std::nullopt;
}

Result<HptSweepResult> SweepHptGrid(const HptSweepOptions& options, const NextBatchFn& next) {
  PATHPROF_ASSIGN_OR_RETURN(auto stack, hwmodel::PathStack::Create(options.stack));
  std::vector<Table> tables = MakeTables(options);
  hwmodel::ExactPathProfile exact, window_exact;
  const hwmodel::Metric metric = options.base.metric;
  auto end_window = [&] {
    if (window_exact.size() == 0) return;
    auto ew = ExactWeights(window_exact, metric);
    for (auto& t : tables) {
      t.dynamic.AddWindow(profiles::OverlapPercent(ew, HptWeights(*t.window_hpt)));
      t.window_hpt->Clear();
    }
    window_exact.Clear();
  };
  auto record = [&](const CompletedPath& c) {
    exact.Record(c);
    window_exact.Record(c);
    for (auto& t : tables) {
      t.hpt->Record(c);
      t.window_hpt->Record(c);
    }
  };
  BranchBatch batch, piece;
  uint64_t in_window = 0;
  for (;;) {
    PATHPROF_ASSIGN_OR_RETURN(bool more, next(&batch));
    if (!more) break;
    SplitAtWindows(
        batch, options.dynamic_window, &in_window, &piece,
        [&](const BranchBatch& p) { stack.ProcessBatch(p, record); }, end_window);
  }
  bool any_window = tables.empty() || tables[0].dynamic.windows() > 0;
  if (!any_window) end_window();  // shorter than one window: score the partial one
  auto ew = ExactWeights(exact, metric);
  for (auto& t : tables) t.overlap = profiles::OverlapPercent(ew, HptWeights(*t.hpt));
  return Collect(tables, exact.size());
}

}  // namespace pathprof::pipeline
