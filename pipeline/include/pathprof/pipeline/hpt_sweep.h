// A Figure 5.7-style sweep of Hot Path Table geometries, behind `pathctl sim --sweep`: the
// complete and dynamic overlap with the exact profile for every HPT size x associativity, in one
// pass over a branch stream (the path stack runs once and feeds every table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/batch_source.h"

namespace pathprof::pipeline {

struct HptSweepOptions {
  hwmodel::PathStackConfig stack = hwmodel::BallLarusPreset();
  // Index, replacement and metric of every table; the grid sets entries and ways.
  hwmodel::HotPathTableConfig base;
  std::vector<uint32_t> sizes, ways;   // the grid
  uint64_t dynamic_window = 10000000;  // branches per window of the dynamic overlap
};

struct HptSweepCell {
  hwmodel::HotPathTableConfig config;
  double overlap = 0;          // complete overlap, percent
  double dynamic_overlap = 0;  // mean over the windows, percent; 0 with none
  size_t dynamic_windows = 0;
};

struct HptSweepResult {
  size_t paths_distinct = 0;
  // Grid order (sizes, then ways); a geometry the HPT refuses (more ways than entries, ...) has
  // no cell.
  std::vector<HptSweepCell> cells;

  // The cell of entries x ways, or none where the geometry was refused.
  std::optional<HptSweepCell> Find(uint32_t entries, uint32_t ways) const;
};

// Fails when the path stack refuses its configuration or with the stream's error.
Result<HptSweepResult> SweepHptGrid(const HptSweepOptions& options, const NextBatchFn& next);

}  // namespace pathprof::pipeline
