#include "pathprof/profiles/accuracy.h"

#include <algorithm>

namespace pathprof::profiles {
namespace detail {

size_t CoverageCount(const std::vector<double>& descending, double total, double fraction) {
  if (total <= 0) return 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  // A relative tolerance, so that 60 + 30 of 100 counts as reaching 90% despite rounding.
  double goal = fraction * total * (1 - 1e-12);
  double acc = 0;
  for (size_t i = 0; i < descending.size(); ++i) {
    acc += descending[i];
    if (acc >= goal) return i + 1;
  }
  return descending.size();
}

}  // namespace detail

void DynamicOverlap::AddWindow(double overlap_percent) {
  if (windows_ == 0) {
    min_ = max_ = overlap_percent;
  } else {
    min_ = std::min(min_, overlap_percent);
    max_ = std::max(max_, overlap_percent);
  }
  sum_ += overlap_percent;
  ++windows_;
}

double DynamicOverlap::AveragePercent() const {
  return windows_ ? sum_ / windows_ : 0;
}

}  // namespace pathprof::profiles
