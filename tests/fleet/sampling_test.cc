#include "sampling.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace pathprof::fleet {
namespace {

std::string HostName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "web-%05d", i);
  return name;
}

TEST(FleetSamplingTest, SelectsAboutTheRequestedShareAndRotatesIt) {
  const FleetSamplingOptions o{.host_fraction = 0.01, .epoch_seconds = 3600};
  constexpr int kHosts = 20'000;
  int selected_0 = 0, selected_1 = 0, both = 0;
  for (int i = 0; i < kHosts; ++i) {
    const bool a = HostSelected(o, HostName(i), 100);
    const bool b = HostSelected(o, HostName(i), 101);
    selected_0 += a;
    selected_1 += b;
    both += a && b;
  }
  // Binomial(20000, 0.01): mean 200, sd 14.1; +-5 sd.
  EXPECT_GT(selected_0, 130);
  EXPECT_LT(selected_0, 270);
  EXPECT_GT(selected_1, 130);
  EXPECT_LT(selected_1, 270);
  // Independent epochs overlap in ~f^2 * N = 2 hosts, not in the same 200.
  EXPECT_LT(both, 15);
  // Deterministic: the host and anyone else compute the same answer.
  EXPECT_EQ(HostSelected(o, "web-00042", 7), HostSelected(o, "web-00042", 7));
}

TEST(FleetSamplingTest, EdgesAndEpochs) {
  EXPECT_TRUE(HostSelected({.host_fraction = 1.0, .epoch_seconds = 60}, "h", 0));
  EXPECT_FALSE(HostSelected({.host_fraction = 0.0, .epoch_seconds = 60}, "h", 0));
  const FleetSamplingOptions o{.host_fraction = 0.5, .epoch_seconds = 3600};
  EXPECT_EQ(SamplingEpoch(o, 7199), 1);
  EXPECT_EQ(SamplingEpoch(o, 7200), 2);
  EXPECT_EQ(SamplingEpoch(o, -1), -1);
}

TEST(FleetSamplingTest, OverheadBudgetArithmetic) {
  EXPECT_DOUBLE_EQ(FleetOverhead(0.01, 0.05, 1.0), 0.0005);  // 1% hosts x 5% = 0.05%
  EXPECT_DOUBLE_EQ(FleetOverhead(1.0, 0.05, 0.01), 0.0005);  // all hosts, 1% of the time
  EXPECT_DOUBLE_EQ(FleetOverhead(0.1, 0.02, 0.25), 0.0005);  // 10% hosts, 2%, a quarter of time
}

}  // namespace
}  // namespace pathprof::fleet
