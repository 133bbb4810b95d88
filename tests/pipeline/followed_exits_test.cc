// Followed children that exit, on real processes and real eBPF: every child's store notes its
// exit, whether its parent reaped it (the pid is gone) or not (a zombie, which only its /proc
// stat tells apart from a running process). The session reads that stat for a few children per
// poll, in turn (docs/performance.md, "System-wide continuous mode"): more zombies than one poll
// reads must all be noted too.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gated_child.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/procfs.h"
#include "pathprof/pipeline/session.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::testing::CpuSeconds;
using pathprof::testing::GatedChild;
using pathprof::testing::SpawnGated;

constexpr int kChildren = 80;  // half of them left zombies: more than a poll's 32 stat reads

// The parent: forks kChildren children that spin 20 ms of CPU each and exit; reaps the even ones
// and leaves the odd ones zombies (then parks, see SpawnGated).
void ForkChildren(double) {
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      const double end = CpuSeconds() + 0.02;
      volatile uint64_t x = 0;
      while (CpuSeconds() < end)
        for (int k = 0; k < 10000; ++k) x = x + uint64_t(k);
      _exit(0);
    }
    children.push_back(child);
  }
  for (int i = 0; i < kChildren; i += 2)
    if (children[i] > 0) waitpid(children[i], nullptr, 0);
}

TEST(FollowedExits, ReapedAndZombieChildrenAreAllNotedExited) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  if (!caps.ebpf.available) GTEST_SKIP() << "eBPF stacks unavailable: " << caps.ebpf.detail;
  GatedChild parent = SpawnGated(ForkChildren, 0, /*park=*/true);
  ASSERT_GT(parent.pid, 0);
  pl::SessionConfig c;
  c.pids = {static_cast<uint32_t>(parent.pid)};
  c.source = pl::SourceChoice::kNone;
  c.sampling.stack_hz = 499;
  c.follow_children = true;
  c.max_descendants = 2 * kChildren;
  ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  auto session = pl::Session::Start("followed-exits", c, caps, nullptr);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  parent.Release();

  // Until every child store says exited, at most 20 s: the children take ~1.6 s of CPU in all.
  const pathprof::procfs::Procfs& proc = pathprof::procfs::Procfs::Host();
  std::vector<uint32_t> running;
  size_t children = 0, zombies = 0;
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    running.clear();
    children = zombies = 0;
    for (const auto& store : (*session)->Stores()) {
      const uint32_t pid = store->Info().pid;
      if (pid == static_cast<uint32_t>(parent.pid)) continue;
      ++children;
      if (!store->Info().exited) running.push_back(pid);
      auto stat = proc.ReadStat(static_cast<pid_t>(pid));
      zombies += stat.ok() && stat->state == 'Z';
    }
    if (children >= kChildren * 3 / 4 && running.empty()) break;
  }
  (*session)->Stop();
  const size_t zombies_left = zombies;
  kill(parent.pid, SIGKILL);
  waitpid(parent.pid, nullptr, 0);  // its zombies go with it (reaped by init)

  EXPECT_GE(children, static_cast<size_t>(kChildren * 3 / 4))
      << "children with a store (each spun 20 ms at 499 Hz)";
  std::string still;
  for (uint32_t pid : running) still += " " + std::to_string(pid);
  EXPECT_TRUE(running.empty()) << "children not noted exited:" << still;
  EXPECT_GT(zombies_left, 32u) << "zombies among them: more than one poll's stat reads";
}

}  // namespace
