#include "pathprof/collectors/window_budget.h"

#include <algorithm>

namespace pathprof::collectors {

WindowBudget::WindowBudget(const WindowBudgetSettings& settings) : settings_(settings) {}

void WindowBudget::RefillLocked(uint64_t now_ns) {
  const double max_windows = settings_.windows_per_second * settings_.burst_seconds;
  const double max_cpu_ns = settings_.cpu_share * settings_.burst_seconds * 1e9;
  if (refilled_ns_ == 0) {  // the first call: a full bucket
    windows_ = max_windows;
    cpu_ns_ = max_cpu_ns;
    refilled_ns_ = now_ns;
    return;
  }
  if (now_ns <= refilled_ns_) return;
  const double seconds = static_cast<double>(now_ns - refilled_ns_) / 1e9;
  refilled_ns_ = now_ns;
  windows_ = std::min(max_windows, windows_ + settings_.windows_per_second * seconds);
  cpu_ns_ = std::min(max_cpu_ns, cpu_ns_ + settings_.cpu_share * seconds * 1e9);
}

WindowBudget::Refusal WindowBudget::Take(uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(now_ns);
  // The CPU share is checked before a window runs and charged after: a window may overdraw
  // it once, and the debt is paid before the next one runs.
  if (settings_.cpu_share > 0 && cpu_ns_ <= 0) return Refusal::kCpu;
  if (settings_.windows_per_second > 0) {
    if (windows_ < 1) return Refusal::kCount;
    windows_ -= 1;
  }
  return Refusal::kNone;
}

void WindowBudget::Spent(uint64_t cpu_ns) {
  if (settings_.cpu_share <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  cpu_ns_ -= static_cast<double>(cpu_ns);
}

}  // namespace pathprof::collectors
