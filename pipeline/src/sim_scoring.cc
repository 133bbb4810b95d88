#include "sim_scoring.h"

namespace pathprof::pipeline {

profiles::WeightedProfile<hwmodel::PathDescriptor> ExactWeights(
    const hwmodel::ExactPathProfile& exact, hwmodel::Metric metric) {
  profiles::WeightedProfile<hwmodel::PathDescriptor> out;
  out.reserve(exact.size());
  for (const auto& [p, metrics] : exact.paths())
    out.emplace_back(p, static_cast<double>(metrics.Get(metric)));
  return out;
}

profiles::WeightedProfile<hwmodel::PathDescriptor> HptWeights(const hwmodel::HotPathTable& hpt) {
  profiles::WeightedProfile<hwmodel::PathDescriptor> out;
  for (const auto& e : hpt.Sorted()) out.emplace_back(e.path, static_cast<double>(e.value));
  return out;
}

}  // namespace pathprof::pipeline
