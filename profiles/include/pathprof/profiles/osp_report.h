// Reports from the OSP reservoir at any moment (Oren, ch. 2.3.6, 5.1, 5.2): the top k subpaths,
// or every subpath above a threshold (iceberg), each with its estimated count and an error bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/osp_reservoir.h"

namespace pathprof::profiles {

// What the report ranks by (ch. 5.1).
enum class OspWeighting : uint8_t {
  kCount = 0,  // estimated occurrences
  kLength,     // estimated occurrences x length: blocks executed inside the subpath
  kCost,       // estimated occurrences x sum of a-priori block costs along the subpath
};

std::string_view OspWeightingName(OspWeighting weighting);

struct OspReportOptions {
  size_t top_k = 10;         // 0 = no limit
  double threshold = 0;      // iceberg: only entries whose metric is at least this
  double confidence = 0.95;  // for the error bound, in (0, 1)
  OspWeighting weighting = OspWeighting::kCount;
};

struct OspReportEntry {
  std::vector<BlockId> blocks;
  uint32_t length = 0;
  uint64_t sample_count = 0;
  double estimated_count = 0;  // sample_count * f / (P(length) * cost acceptance)
  double relative_error = 0;   // eq. 2.15 at the chosen confidence; +inf with no samples
  double count_low = 0;        // estimated_count * (1 - relative_error), at least 0
  double count_high = 0;       // estimated_count * (1 + relative_error)
  double metric = 0;           // the ranked value (estimated_count times the weighting)
};

struct OspReport {
  OspStats stats;
  double confidence = 0.95;
  OspWeighting weighting = OspWeighting::kCount;
  std::vector<OspReportEntry> entries;  // by metric, largest first
};

// One-sided Chernoff bound (eq. 2.15): Pr(x < (1 - e) E[x]) <= exp(-e^2 E[x] / 2), solved for e
// at confidence c with the observed sample count standing in for E[x]:
// e = sqrt(2 ln(1 / (1 - c)) / x).
double ChernoffRelativeError(double sample_count, double confidence);

Result<OspReport> BuildOspReport(const OspReservoir& reservoir, const OspReportOptions& options);

}  // namespace pathprof::profiles
