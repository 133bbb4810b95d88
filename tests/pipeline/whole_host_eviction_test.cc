// Whole-host mode at its store bound, on real processes and real eBPF: two cold processes fill
// the session's two stores; a hot one, refused at first, takes the coldest's place once it has
// been refused more samples than that store held. Runs alone (PATHPROF_SERIAL_TESTS): another
// test's busy process would be a hot store of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gated_child.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/pipeline/session.h"
#include "target_stats.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::testing::CpuSeconds;
using pathprof::testing::Dropped;
using pathprof::testing::GatedChild;
using pathprof::testing::SpawnGated;
using pathprof::testing::StatsOf;

void Spin(double seconds) {
  const double end = CpuSeconds() + seconds;
  volatile uint64_t x = 0;
  while (CpuSeconds() < end)
    for (int i = 0; i < 1000000; ++i) x = x + uint64_t(i);
}
// A child that spins for `seconds` of CPU time once released, then parks until killed.
GatedChild Spawn(double seconds) {
  return SpawnGated(Spin, seconds, /*park=*/true);
}
void End(const GatedChild& c) {
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
}

TEST(WholeHostEviction, AHotProcessTakesTheColdestStoresPlace) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  if (!caps.ebpf.available) GTEST_SKIP() << "eBPF stacks unavailable: " << caps.ebpf.detail;
  pl::SessionConfig c;
  c.every_process = true;
  c.source = pl::SourceChoice::kNone;
  c.sampling.stack_hz = 199;
  c.max_descendants = 2;
  ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  GatedChild cold1 = Spawn(0.3), cold2 = Spawn(0.3), hot = Spawn(60);
  ASSERT_GT(cold1.pid, 0);
  ASSERT_GT(hot.pid, 0);
  auto session = pl::Session::Start("evict", c, caps, nullptr);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  cold1.Release();
  cold2.Release();
  // Both cold children spin their 0.3 s and take the two stores (or, on a busy host, whatever
  // else ran first: the hot one must then be hotter than those).
  std::vector<pl::TargetStats> before;
  for (int i = 0; i < 100 && before.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    before = (*session)->Stats();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the children park
  before = (*session)->Stats();
  std::string held;
  for (const auto& t : before) {
    held += " " + std::to_string(t.pid) + " (" + std::to_string(t.stack_samples) + " samples";
    for (const auto& [reason, n] : t.drops) held += ", " + std::to_string(n) + " " + reason;
    held += ")";
  }
  ASSERT_EQ(before.size(), 2u) << "stores:" << held << "; cold children " << cold1.pid << ", "
                               << cold2.pid;
  EXPECT_EQ(StatsOf(before, hot.pid), nullptr);
  hot.Release();
  const pl::TargetStats* mine = nullptr;
  std::vector<pl::TargetStats> stats;
  for (int i = 0; i < 300; ++i) {
    stats = (*session)->Stats();
    mine = StatsOf(stats, hot.pid);
    if (mine != nullptr && mine->stack_samples >= 100) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  (*session)->Stop();
  stats = (*session)->Stats();
  mine = StatsOf(stats, hot.pid);
  End(cold1);
  End(cold2);
  End(hot);
  ASSERT_NE(mine, nullptr) << "the hot process never got a store";
  EXPECT_GE(mine->stack_samples, 100u);
  EXPECT_LE(stats.size(), 2u);  // the bound held
  // It was refused before it got its place, and what the evicted store held is counted.
  EXPECT_GT(Dropped(stats, "process_limit"), 0u);
  EXPECT_GT(Dropped(stats, "process_evicted"), 0u);
}

}  // namespace
