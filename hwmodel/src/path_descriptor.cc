#include "pathprof/hwmodel/path_descriptor.h"

#include <cstdio>

namespace pathprof::hwmodel {

std::string FormatPathDescriptor(const PathDescriptor& p) {
  char head[64];
  std::snprintf(head, sizeof(head),
                "start=0x%llx len=%u outcomes=", static_cast<unsigned long long>(p.start),
                static_cast<unsigned>(p.length));
  std::string out = head;
  for (int i = 0; i < p.length && i < kMaxPathLength; ++i) {
    out.push_back(((p.outcomes >> i) & 1) ? '1' : '0');
  }
  return out;
}

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kCount:
      return "count";
    case Metric::kInstructions:
      return "instructions";
    case Metric::kCycles:
      return "cycles";
    case Metric::kMispredictions:
      return "mispredictions";
  }
  return "unknown";
}

bool ParseMetric(std::string_view name, Metric* out) {
  for (int i = 0; i < kMetricCount; ++i) {
    const auto m = static_cast<Metric>(i);
    if (MetricName(m) == name) {
      *out = m;
      return true;
    }
  }
  return false;
}

}  // namespace pathprof::hwmodel
