// The pipeline end to end on real processes: eBPF stack samples -> symbolization -> PCCT, the
// target lifecycle (exit mid-session keeps the profile), and the session manager's bounds.
// Needs root (CAP_BPF, CAP_PERFMON); skips with the reason otherwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "gated_child.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/session_manager.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::testing::CpuSeconds;
using pathprof::testing::GatedChild;
using pathprof::testing::SpawnGated;

// The known hot function: the child spends its whole life here.
extern "C" __attribute__((noinline)) void pathprof_test_spin(double seconds) {
  const double end = CpuSeconds() + seconds;
  volatile uint64_t x = 0;
  while (CpuSeconds() < end) {
    for (int i = 0; i < 100000; ++i) x = x + uint64_t(i);
  }
}

// A child that waits for Release(), spins in pathprof_test_spin for `seconds` of CPU time and
// exits.
GatedChild SpawnSpinner(double seconds) {
  return SpawnGated(pathprof_test_spin, seconds, /*park=*/false);
}

// Waits until the session has applied `n` stack samples (or 60 s pass).
void WaitForSamples(const pl::Session& session, uint64_t n) {
  for (int i = 0; i < 600; ++i) {
    const auto stats = session.Stats();
    if (!stats.empty() && stats[0].stack_samples >= n) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

class SessionLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    caps_ = pathprof::collectors::ProbeHostCapabilities();
    if (!caps_.ebpf.available) GTEST_SKIP() << "eBPF stacks unavailable: " << caps_.ebpf.detail;
  }
  pl::SessionConfig StacksOnly(pid_t pid) {
    pl::SessionConfig c;
    c.pids = {static_cast<uint32_t>(pid)};
    c.source = pl::SourceChoice::kNone;
    c.sampling.stack_hz = 199;
    return c;
  }
  pathprof::collectors::HostCapabilities caps_;
};

// The node with the most self weight, and the sum of self weights.
std::pair<const pl::CctNode*, double> HottestLeaf(const pl::CallingContextTree& t) {
  const pl::CctNode* best = nullptr;
  double self_total = 0;
  for (const pl::CctNode& n : t.nodes) {
    self_total += n.self_weight;
    if (best == nullptr || n.self_weight > best->self_weight) best = &n;
  }
  return {best, self_total};
}

TEST_F(SessionLiveTest, HottestLeafIsTheSpinningFunction) {
  GatedChild spinner = SpawnSpinner(60);
  const pid_t child = spinner.pid;
  ASSERT_GT(child, 0);
  auto session = pl::Session::Start("t1", StacksOnly(child), caps_, nullptr);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  spinner.Release();
  WaitForSamples(**session, 100);
  (*session)->Stop();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);

  pl::CctQuery q;
  q.max_nodes = 100000;
  q.max_depth = 1000;
  const pl::CallingContextTree tree = (*session)->Cct(q);
  ASSERT_GE(tree.samples, 100u);
  auto [leaf, self_total] = HottestLeaf(tree);
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->function.function, "pathprof_test_spin");
  EXPECT_GE(leaf->self_weight / double(tree.samples), 0.8)
      << "self " << leaf->self_weight << " of " << tree.samples << " samples";
  EXPECT_NE(leaf->function.file.find("session_live_test.cc"), std::string::npos)
      << leaf->function.ToString();

  const pl::HotMethodsResult methods = (*session)->HotMethods(3);
  ASSERT_FALSE(methods.methods.empty());
  EXPECT_EQ(methods.methods[0].function.function, "pathprof_test_spin");
  EXPECT_FALSE(methods.hot_data_streams_unsupported.empty());

  const std::vector<pl::TargetStats> stats = (*session)->Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].stack_samples, tree.samples);
  EXPECT_GT(stats[0].pipeline_cpu_seconds, 0);
  EXPECT_EQ((*session)->Info().state, pl::SessionState::kStopped);
  EXPECT_EQ((*session)->Info().source, pathprof::collectors::BranchSource::kNone);
}

TEST_F(SessionLiveTest, ShortLivedTargetKeepsItsSymbolizedProfileAfterExit) {
  pl::SessionManager manager({}, caps_);
  // Half a second of CPU (about 100 samples at 199 Hz), then gone.
  GatedChild spinner = SpawnSpinner(0.5);
  const pid_t child = spinner.pid;
  ASSERT_GT(child, 0);
  auto session = manager.Start(StacksOnly(child));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  spinner.Release();
  // The session ends by itself when its only target exits; reap the child after it is seen as a
  // zombie so /proc shows the exit.
  ASSERT_TRUE((*session)->WaitEnded(20000));
  waitpid(child, nullptr, 0);
  const pl::SessionInfo info = (*session)->Info();
  EXPECT_EQ(info.state, pl::SessionState::kTargetExited);
  EXPECT_GT(info.stopped_unix_ms, 0);

  auto store = (*session)->Store(static_cast<uint32_t>(child));
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Info().exited);
  // Queried after the process is gone: the mappings kept by the store still symbolize it.
  ASSERT_FALSE(kill(child, 0) == 0);
  pl::CctQuery q;
  q.max_nodes = 100000;
  q.max_depth = 1000;
  const pl::CallingContextTree tree = store->Cct(q);
  ASSERT_GE(tree.samples, 50u);
  auto [leaf, self_total] = HottestLeaf(tree);
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->function.function, "pathprof_test_spin");

  // Still listed and retrievable (kept for the retention period).
  ASSERT_EQ(manager.List().size(), 1u);
  EXPECT_NE(manager.Get(info.id), nullptr);
  EXPECT_EQ(manager.SessionsFor(static_cast<uint32_t>(child)).size(), 1u);
  EXPECT_EQ(manager.ReapExpired(), 0u);
  auto stopped = manager.Stop(info.id);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->state, pl::SessionState::kTargetExited);
  EXPECT_FALSE(manager.Stop("no-such-session").ok());
}

TEST_F(SessionLiveTest, ManagerBoundsSessionsAndRejectsMissingProcesses) {
  pl::SessionManagerOptions options;
  options.max_sessions = 1;
  pl::SessionManager manager(options, caps_);
  GatedChild spinner = SpawnSpinner(30);
  const pid_t child = spinner.pid;
  auto first = manager.Start(StacksOnly(child));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = manager.Start(StacksOnly(child));
  EXPECT_EQ(second.status().code(), pathprof::ErrorCode::kResourceExhausted);
  (void)manager.Stop((*first)->id());
  kill(child, SIGKILL);
  spinner.Release();
  waitpid(child, nullptr, 0);

  pl::SessionManager other({}, caps_);
  auto gone = other.Start(StacksOnly(child));  // reaped: no such process any more
  EXPECT_EQ(gone.status().code(), pathprof::ErrorCode::kNotFound);
}

}  // namespace
