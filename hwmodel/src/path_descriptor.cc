#include "pathprof/hwmodel/path_descriptor.h"

#include <cstdio>

namespace pathprof::hwmodel {

std::string FormatOutcomes(uint64_t outcomes, uint32_t length, OutcomeLetters letters) {
  std::string out;
  for (uint32_t i = 0; i < length && i < static_cast<uint32_t>(kMaxPathLength); ++i)
    out.push_back(((outcomes >> i) & 1) ? letters.taken : letters.not_taken);
  return out;
}

std::string FormatPathDescriptor(const PathDescriptor& p) {
  char head[64];
  std::snprintf(head, sizeof(head),
                "start=0x%llx len=%u outcomes=", static_cast<unsigned long long>(p.start),
                static_cast<unsigned>(p.length));
  return head + FormatOutcomes(p.outcomes, p.length, kOutcomeBits);
}

std::string_view MetricName(Metric m) {
  return WordOf(kMetricWords, m, "unknown");
}

bool ParseMetric(std::string_view name, Metric* out) {
  return ParseWord(kMetricWords, name, out);
}

}  // namespace pathprof::hwmodel
