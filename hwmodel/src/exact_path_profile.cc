#include "pathprof/hwmodel/exact_path_profile.h"

#include <algorithm>
#include <tuple>

namespace pathprof::hwmodel {

PathMetrics ExactPathProfile::Get(const PathDescriptor& p) const {
  auto it = paths_.find(p);
  return it == paths_.end() ? PathMetrics{} : it->second;
}

std::vector<std::pair<PathDescriptor, PathMetrics>> ExactPathProfile::Sorted(Metric metric) const {
  std::vector<std::pair<PathDescriptor, PathMetrics>> out(paths_.begin(), paths_.end());
  std::sort(out.begin(), out.end(), [metric](const auto& a, const auto& b) {
    const uint64_t va = a.second.Get(metric), vb = b.second.Get(metric);
    if (va != vb) return va > vb;
    return std::tie(a.first.start, a.first.length, a.first.outcomes) <
           std::tie(b.first.start, b.first.length, b.first.outcomes);
  });
  return out;
}

uint64_t ExactPathProfile::Total(Metric metric) const {
  uint64_t total = 0;
  for (const auto& [path, m] : paths_) total += m.Get(metric);
  return total;
}

}  // namespace pathprof::hwmodel
