#include "pathprof/fleet/backoff.h"

#include <gtest/gtest.h>

namespace pathprof::fleet {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesUpToTheCapWithoutJitter) {
  const BackoffOptions o{
      .initial = milliseconds(100), .max = milliseconds(1000), .multiplier = 2.0, .jitter = 0.0};
  const int64_t expected[] = {100, 200, 400, 800, 1000, 1000};
  for (uint32_t retry = 0; retry < 6; ++retry) {
    EXPECT_EQ(BackoffDelay(o, retry, 0.7).count(), expected[retry]) << retry;
  }
  // No overflow for absurd retry counts: pow() gives inf, the cap wins.
  EXPECT_EQ(BackoffDelay(o, 5000, 0.0).count(), 1000);
}

TEST(BackoffTest, JitterShrinksTheDelayByAtMostTheJitterFraction) {
  const BackoffOptions o{
      .initial = milliseconds(100), .max = milliseconds(1000), .multiplier = 2.0, .jitter = 0.5};
  // retry 1: d = 200; delay = d * (1 - 0.5 u).
  EXPECT_EQ(BackoffDelay(o, 1, 0.0).count(), 200);
  EXPECT_EQ(BackoffDelay(o, 1, 0.5).count(), 150);
  EXPECT_EQ(BackoffDelay(o, 1, 0.999).count(), 100);
  const BackoffOptions full{
      .initial = milliseconds(100), .max = milliseconds(1000), .multiplier = 3.0, .jitter = 1.0};
  EXPECT_EQ(BackoffDelay(full, 2, 0.25).count(), 675);  // 900 * 0.75
}

}  // namespace
}  // namespace pathprof::fleet
