// The reference profile: every path with its exact metrics (an infinitely large HPT).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/hwmodel/path_descriptor.h"

namespace pathprof::hwmodel {

class ExactPathProfile {
 public:
  void Record(const CompletedPath& c) { paths_[c.path].Add(c.metrics); }
  void Add(const PathDescriptor& p, const PathMetrics& m) { paths_[p].Add(m); }

  size_t size() const { return paths_.size(); }
  const std::unordered_map<PathDescriptor, PathMetrics, PathDescriptorHash>& paths() const {
    return paths_;
  }
  // Metrics of one path; all zero when never seen.
  PathMetrics Get(const PathDescriptor& p) const;
  // Paths by decreasing value of `metric` (ties: by start, length, outcomes).
  std::vector<std::pair<PathDescriptor, PathMetrics>> Sorted(Metric metric) const;
  uint64_t Total(Metric metric) const;
  void Clear() { paths_.clear(); }

 private:
  std::unordered_map<PathDescriptor, PathMetrics, PathDescriptorHash> paths_;
};

}  // namespace pathprof::hwmodel
