// Retry pacing for pushes: exponential backoff with jitter, so that a backend coming back after
// an outage is not hit by every host of the fleet in the same second.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace pathprof::fleet {

struct BackoffOptions {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{30'000};
  double multiplier = 2.0;  // >= 1
  // Fraction of each delay that is random: the delay is drawn uniformly from
  // [(1 - jitter) * d, d] where d = min(max, initial * multiplier^retry). 0: no jitter;
  // 1: "full jitter".
  double jitter = 0.5;
};

// Delay before retry number `retry` (0 = the first retry). `uniform01` is a draw from [0, 1).
std::chrono::milliseconds BackoffDelay(const BackoffOptions& options, uint32_t retry,
                                       double uniform01);

}  // namespace pathprof::fleet
