#include "pathprof/profiles/osp_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace pathprof::profiles {

std::string_view OspWeightingName(OspWeighting weighting) {
  switch (weighting) {
    case OspWeighting::kCount:
      return "count";
    case OspWeighting::kLength:
      return "length";
    case OspWeighting::kCost:
      return "cost";
  }
  return "unknown";
}

double ChernoffRelativeError(double sample_count, double confidence) {
  if (!(sample_count > 0)) return std::numeric_limits<double>::infinity();
  return std::sqrt(2.0 * std::log(1.0 / (1.0 - confidence)) / sample_count);
}

Result<OspReport> BuildOspReport(const OspReservoir& reservoir, const OspReportOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1)) {
    return Error(ErrorCode::kInvalidArgument, "osp report: confidence " +
                                                  std::to_string(options.confidence) +
                                                  " must be in (0, 1), e.g. 0.95");
  }
  if (!(options.threshold >= 0) || !std::isfinite(options.threshold)) {
    return Error(ErrorCode::kInvalidArgument, "osp report: threshold must be finite and >= 0");
  }
  if (options.weighting == OspWeighting::kCost && !reservoir.config().block_cost) {
    return Error(ErrorCode::kInvalidArgument,
                 "osp report: cost weighting needs OspConfig::block_cost (a-priori block costs)");
  }
  OspSnapshot snap = reservoir.Snapshot();
  OspReport report;
  report.stats = snap.stats;
  report.confidence = options.confidence;
  report.weighting = options.weighting;
  const OspLengthDistribution& lengths = reservoir.config().lengths;
  for (OspSample& s : snap.samples) {
    const double p_length = lengths.Probability(s.length);
    if (!(p_length > 0) || !(s.acceptance > 0)) continue;  // cannot happen for sampled entries
    OspReportEntry e;
    e.length = s.length;
    e.sample_count = s.count;
    e.estimated_count = static_cast<double>(s.count) * snap.stats.f / (p_length * s.acceptance);
    e.relative_error = ChernoffRelativeError(static_cast<double>(s.count), options.confidence);
    e.count_low = std::max(0.0, e.estimated_count * (1 - e.relative_error));
    e.count_high = e.estimated_count * (1 + e.relative_error);
    switch (options.weighting) {
      case OspWeighting::kCount:
        e.metric = e.estimated_count;
        break;
      case OspWeighting::kLength:
        e.metric = e.estimated_count * s.length;
        break;
      case OspWeighting::kCost:
        e.metric = e.estimated_count * s.block_cost_sum;
        break;
    }
    if (e.metric < options.threshold) continue;
    e.blocks = std::move(s.blocks);
    report.entries.push_back(std::move(e));
  }
  auto by_metric = [](const OspReportEntry& a, const OspReportEntry& b) {
    if (a.metric != b.metric) return a.metric > b.metric;
    return a.blocks < b.blocks;  // deterministic order for ties
  };
  if (options.top_k > 0 && report.entries.size() > options.top_k) {
    std::partial_sort(report.entries.begin(),
                      report.entries.begin() + static_cast<ptrdiff_t>(options.top_k),
                      report.entries.end(), by_metric);
    report.entries.resize(options.top_k);
  } else {
    std::sort(report.entries.begin(), report.entries.end(), by_metric);
  }
  return report;
}

}  // namespace pathprof::profiles
