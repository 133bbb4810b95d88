#include "pathprof/fleet/backoff.h"

#include <algorithm>
#include <cmath>

namespace pathprof::fleet {

std::chrono::milliseconds BackoffDelay(const BackoffOptions& options, uint32_t retry,
                                       double uniform01) {
  const double initial = static_cast<double>(std::max<int64_t>(options.initial.count(), 0));
  const double cap = static_cast<double>(std::max<int64_t>(options.max.count(), 0));
  const double multiplier = std::max(options.multiplier, 1.0);
  // pow can overflow to inf for large retries; min() with the cap keeps it finite.
  const double grown = std::min(cap, initial * std::pow(multiplier, static_cast<double>(retry)));
  const double jitter = std::clamp(options.jitter, 0.0, 1.0);
  const double u = std::clamp(uniform01, 0.0, 1.0);
  const double delay = grown * (1.0 - jitter * u);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(delay)));
}

}  // namespace pathprof::fleet
