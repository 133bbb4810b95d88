// Whole-host mode with snapshot windows, on real processes and real eBPF: a session over every
// process (the daemon's continuous mode) gives each process that joins windows of its own,
// including one started after the session, and a budget shared by the host bounds the windows
// emulated, with what it cut counted; the branches kept for exports are the session's bound in
// all, shared by its stores, not that bound per process. Runs alone (PATHPROF_SERIAL_TESTS):
// another test's busy processes would join it and share the budget.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/collectors/window_budget.h"
#include "pathprof/pipeline/session.h"
#include "target_stats.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::testing::Dropped;
using pathprof::testing::StatsOf;

pid_t StartHotLoop() {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string bin = std::string(PATHPROF_BIN_DIR) + "/example_hotloop_static";
    execl(bin.c_str(), bin.c_str(), "4000000000", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(WholeHostWindows, EveryProcessThatJoinsGetsWindowsWithinTheHostsBudget) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  if (!caps.ebpf.available) GTEST_SKIP() << "eBPF stacks unavailable: " << caps.ebpf.detail;
  if (geteuid() != 0) GTEST_SKIP() << "needs root (every process's samples)";
  pathprof::collectors::WindowBudgetSettings bs;
  bs.windows_per_second = 150;
  bs.cpu_share = 0;  // the count alone, so that the bound below is exact
  bs.burst_seconds = 0.25;
  auto budget = std::make_shared<pathprof::collectors::WindowBudget>(bs);
  pl::SessionConfig c;
  c.every_process = true;
  c.source = pl::SourceChoice::kSnapshot;
  c.sampling.stack_hz = 99;
  c.sampling.bursts_per_second = 499;  // two busy loops: ~1,000 samples a second, over budget
  c.max_descendants = 64;
  c.window_budget = budget;
  c.export_branch_events = 1024;  // in all: each store its share
  ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  auto session = pl::Session::Start("whole-host-windows", c, caps, nullptr);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const auto started = std::chrono::steady_clock::now();
  // Both born after the session started: they join on their first sample.
  const pid_t a = StartHotLoop(), b = StartHotLoop();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  std::vector<pl::TargetStats> stats;
  for (int i = 0; i < 100; ++i) {  // 10 s at most
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stats = (*session)->Stats();
    const pl::TargetStats* sa = StatsOf(stats, a);
    const pl::TargetStats* sb = StatsOf(stats, b);
    if (sa != nullptr && sb != nullptr && sa->windows >= 50 && sb->windows >= 50) break;
  }
  (*session)->Stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stats = (*session)->Stats();
  kill(a, SIGKILL);
  kill(b, SIGKILL);
  waitpid(a, nullptr, 0);
  waitpid(b, nullptr, 0);
  const pl::TargetStats* sa = StatsOf(stats, a);
  const pl::TargetStats* sb = StatsOf(stats, b);
  ASSERT_NE(sa, nullptr) << "the first loop never joined";
  ASSERT_NE(sb, nullptr) << "the second loop never joined";
  EXPECT_GE(sa->windows, 50u);
  EXPECT_GE(sb->windows, 50u);
  EXPECT_FALSE(sa->window_weighting.empty());
  uint64_t windows = 0;
  for (const auto& t : stats) windows += t.windows;
  std::printf(
      "%.1f s: %zu processes joined, %llu windows (loops %llu, %llu), %llu cut by the "
      "budget\n",
      seconds, stats.size(), static_cast<unsigned long long>(windows),
      static_cast<unsigned long long>(sa->windows), static_cast<unsigned long long>(sb->windows),
      static_cast<unsigned long long>(Dropped(stats, "snapshot_budget_count")));
  // At most the budget's rate over the session's life, plus the burst it starts with; a
  // window with no event is not handed on, so fewer is fine.
  EXPECT_LE(windows, static_cast<uint64_t>(150 * (seconds + 0.5) + 150 * 0.25))
      << windows << " windows in " << seconds << " s";
  EXPECT_GT(Dropped(stats, "snapshot_budget_count"), 0u) << "two busy loops at 499 Hz";

  // The windows kept for exports: the session's 1,024 branches in all, shared by its stores
  // (the busy loops give way first), past it by at most the window each loop adds before it
  // lets older ones go. Kept per process, each loop would hold 1,024 of its 50+ windows'.
  uint64_t loops_kept = 0;
  size_t largest = 0;
  for (const pid_t loop : {a, b}) {
    const auto store = (*session)->Store(static_cast<uint32_t>(loop));
    ASSERT_NE(store, nullptr);
    for (const auto& w : store->RecentBranches().batches)
      largest = std::max(largest, w.events.size());
    EXPECT_GT(store->RecentBranchEvents(), 0u) << "loop " << loop;
    loops_kept += store->RecentBranchEvents();
  }
  EXPECT_LE(loops_kept, 1024 + 2 * largest);
}

}  // namespace
