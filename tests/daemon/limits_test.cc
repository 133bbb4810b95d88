#include "pathprof/daemon/limits.h"

#include <gtest/gtest.h>

namespace pathprof::daemon {
namespace {

using Clock = std::chrono::steady_clock;

TEST(TokenBucket, BurstThenRefillAtRate) {
  auto t0 = Clock::time_point{} + std::chrono::seconds(100);
  TokenBucket b(10, 3, t0);  // 10/s, burst 3
  double retry = 0;
  EXPECT_TRUE(b.Take(t0, &retry));
  EXPECT_TRUE(b.Take(t0, &retry));
  EXPECT_TRUE(b.Take(t0, &retry));
  EXPECT_FALSE(b.Take(t0, &retry));
  EXPECT_NEAR(retry, 100, 1e-6);  // one token at 10/s
  EXPECT_FALSE(b.Take(t0 + std::chrono::milliseconds(50), &retry));
  EXPECT_NEAR(retry, 50, 1e-6);
  EXPECT_TRUE(b.Take(t0 + std::chrono::milliseconds(100), &retry));
  // A long idle period refills only up to the burst.
  auto later = t0 + std::chrono::seconds(60);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.Take(later, &retry));
  EXPECT_FALSE(b.Take(later, &retry));
}

TEST(RateLimiter, ClientsHaveSeparateBuckets) {
  RateLimiter r(0.001, 2);  // effectively no refill during the test
  double retry;
  EXPECT_TRUE(r.Allow("uid:1000", &retry));
  EXPECT_TRUE(r.Allow("uid:1000", &retry));
  EXPECT_FALSE(r.Allow("uid:1000", &retry));
  EXPECT_TRUE(r.Allow("uid:0", &retry));  // another client is not starved
  EXPECT_EQ(r.refused(), 1u);
}

TEST(QuotaCounter, PerClientAndTotal) {
  QuotaCounter q;
  EXPECT_TRUE(q.Acquire("a", 2, 3));
  EXPECT_TRUE(q.Acquire("a", 2, 3));
  EXPECT_FALSE(q.Acquire("a", 2, 3));  // a's own bound
  EXPECT_TRUE(q.Acquire("b", 2, 3));
  EXPECT_FALSE(q.Acquire("c", 2, 3));  // the total bound
  q.Release("a");
  EXPECT_TRUE(q.Acquire("c", 2, 3));
  EXPECT_EQ(q.total(), 3u);
  q.Release("nobody");  // harmless
  EXPECT_EQ(q.total(), 3u);
}

TEST(QuotaCounter, TheLastPlacesAreForAdmins) {
  QuotaCounter q;
  EXPECT_TRUE(q.Acquire("uid:1000", 8, 4, 1, false));
  EXPECT_TRUE(q.Acquire("uid:1001", 8, 4, 1, false));
  EXPECT_TRUE(q.Acquire("uid:1002", 8, 4, 1, false));
  EXPECT_FALSE(q.Acquire("uid:1003", 8, 4, 1, false));  // the reserve
  EXPECT_TRUE(q.Acquire("uid:0", 8, 4, 1, true));
  EXPECT_FALSE(q.Acquire("uid:0", 8, 4, 1, true));  // the total binds admins too
  EXPECT_EQ(q.total(), 4u);
}

}  // namespace
}  // namespace pathprof::daemon
