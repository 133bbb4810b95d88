#include "pathprof/pipeline/accounting.h"

#include "pathprof/core/clock.h"

namespace pathprof::pipeline {

CpuCharger::CpuCharger() : last_ns_(ThreadCpuNs()) {}

void CpuCharger::Note(TargetAccounting* target) {
  ++pending_;
  for (auto& [t, n] : noted_) {
    if (t == target) {
      ++n;
      return;
    }
  }
  noted_.emplace_back(target, 1);
}

void CpuCharger::Flush() {
  if (pending_ == 0) return;
  const uint64_t now = ThreadCpuNs();
  const uint64_t spent = now - last_ns_;
  last_ns_ = now;
  for (const auto& [target, n] : noted_)
    target->pipeline_cpu_ns.fetch_add(spent * n / pending_, std::memory_order_relaxed);
  noted_.clear();
  pending_ = 0;
}

}  // namespace pathprof::pipeline
