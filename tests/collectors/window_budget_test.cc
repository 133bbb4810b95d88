// The host's window budget: a full burst at first, then the rate; the CPU share charged after
// each window and refused while in debt; a quiet spell saves up no more than the burst.
#include "pathprof/collectors/window_budget.h"

#include <gtest/gtest.h>

namespace pathprof::collectors {
namespace {

using Refusal = WindowBudget::Refusal;
constexpr uint64_t kSecond = 1'000'000'000;

int Taken(WindowBudget& b, uint64_t at_ns, int tries) {
  int n = 0;
  for (int i = 0; i < tries; ++i) n += b.Take(at_ns) == Refusal::kNone;
  return n;
}

TEST(WindowBudget, AFullBurstThenTheRate) {
  WindowBudgetSettings s;
  s.windows_per_second = 100;
  s.cpu_share = 0;
  s.burst_seconds = 0.25;
  WindowBudget b(s);
  const uint64_t t0 = 5 * kSecond;
  EXPECT_EQ(Taken(b, t0, 1000), 25);  // the burst
  EXPECT_EQ(b.Take(t0), Refusal::kCount);
  EXPECT_EQ(Taken(b, t0 + kSecond / 10, 1000), 10);   // 100 a second for 0.1 s
  EXPECT_EQ(Taken(b, t0 + 10 * kSecond, 1000), 25);   // ten quiet seconds: the burst, no more
  EXPECT_EQ(Taken(b, t0 + 10 * kSecond - 1, 10), 0);  // time going backwards adds nothing
}

TEST(WindowBudget, TheCpuShareIsChargedAfterAndRefusedWhileInDebt) {
  WindowBudgetSettings s;
  s.windows_per_second = 0;  // no bound on the count
  s.cpu_share = 0.02;        // 20 ms a second
  s.burst_seconds = 0.25;    // 5 ms saved up at most
  WindowBudget b(s);
  const uint64_t t0 = kSecond;
  ASSERT_EQ(b.Take(t0), Refusal::kNone);
  b.Spent(30'000'000);  // one window overdraws it: 30 ms against 5
  EXPECT_EQ(b.Take(t0), Refusal::kCpu);
  EXPECT_EQ(b.Take(t0 + kSecond), Refusal::kCpu);  // 20 ms back: still 5 ms in debt
  EXPECT_EQ(b.Take(t0 + 2 * kSecond), Refusal::kNone);
  EXPECT_EQ(Taken(b, t0 + 2 * kSecond, 50), 50);  // nothing charged meanwhile: no bound
}

}  // namespace
}  // namespace pathprof::collectors
