// The burst tracer when things go wrong, on real processes: its host or itself killed, a target
// that execs, forks, or creates threads by the thousand, a mechanism that passed the probe and
// then fails, and targets it must refuse. Whatever happens, no thread of the target is left
// traced or stopped, a target that exits is reaped by its own parent, and every stop request
// is answered within a second.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/core/clock.h"
#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/stepping/step_probe.h"
#include "ptrace_burst_test_util.h"

namespace pathprof::stepping {
namespace {

using testing::Bin;
using testing::Collected;
using testing::KillAndReap;
using testing::RunsFreely;
using testing::Spawn;
using testing::WaitFor;

// example_churn with its stdout on a pipe we read at the end.
struct Churn {
  pid_t pid = -1;
  int out = -1;
  explicit Churn(const std::vector<std::string>& args) {
    int p[2];
    if (pipe(p) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(p[1], 1);
      close(p[0]);
      close(p[1]);
      std::vector<std::string> argv = {Bin("example_churn")};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    close(p[1]);
    out = p[0];
  }
  // Waits for it to exit (it runs for --seconds); returns its output.
  std::string Finish(int* status) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(out, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(out);
    waitpid(pid, status, 0);
    return text;
  }
};

PtraceBurstOptions Options(pid_t pid) {
  PtraceBurstOptions o;
  o.pid = pid;
  o.bursts_per_second = 200;
  o.max_stopped_fraction = 0.3;
  o.seed = 11;
  return o;
}

// How long Stop() takes: the bound is one second.
uint64_t TimedStopNs(PtraceBurstCollector& c, PtraceBurstStats* s) {
  const uint64_t t0 = MonotonicNs();
  *s = c.Stop();
  return MonotonicNs() - t0;
}

TEST(PtraceBurstsFaults, RefusesItselfAndItsAncestors) {
  for (pid_t pid : {getpid(), getppid()}) {
    auto c = PtraceBurstCollector::Start(Options(pid), {});
    ASSERT_FALSE(c.ok()) << pid;
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(pid == getpid() ? "pathprof itself" : "ancestor"),
              std::string::npos)
        << c.status().message();
  }
}

// kill -9 of the tracer between bursts: the kernel detaches every thread, none is left stopped,
// and the collector reports the tracer's death.
TEST(PtraceBurstsFaults, KilledTracerBetweenBurstsLeavesTargetRunning) {
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  Collected got;
  PtraceBurstOptions o = Options(target);
  o.bursts_per_second = 2;  // gaps of 250-750 ms: a kill just after a window lands between
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return got.size() >= 1; }, 10000));
  usleep(30000);
  ASSERT_EQ(kill((*c)->tracer_pid(), SIGKILL), 0);
  ASSERT_TRUE((*c)->WaitFinished(2000));
  EXPECT_NE((*c)->failure().find("killed by signal 9"), std::string::npos) << (*c)->failure();
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

// A target that creates a thousand threads a second keeps doing so: new threads are seized
// without a stop, and nothing waits on them.
TEST(PtraceBurstsFaults, ThreadChurnIsNotFrozen) {
  Churn churn({"--threads", "1000", "--seconds", "4"});
  ASSERT_GT(churn.pid, 0);
  usleep(300000);
  Collected got;
  auto c = PtraceBurstCollector::Start(Options(churn.pid), got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int st = 0;
  const std::string out = churn.Finish(&st);
  ASSERT_TRUE((*c)->WaitFinished(5000)) << "the session did not end with the target";
  PtraceBurstStats s;
  EXPECT_LT(TimedStopNs(**c, &s), 1'000'000'000u);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  // Every second of the run still created threads (1,000/s requested; a frozen target shows 0).
  unsigned long made = 0, seconds = 0, slowest = ~0ul;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long t, f, b;
    if (std::sscanf(line.c_str(), "threads %lu forks %lu bad_children %lu", &t, &f, &b) != 3)
      continue;
    made += t;
    ++seconds;
    slowest = std::min(slowest, t);
  }
  EXPECT_GE(seconds, 3u) << out;
  EXPECT_GT(slowest, 100u) << "a second with almost no new threads: the target froze\n" << out;
  EXPECT_GT(s.threads_attached, 1u);
  EXPECT_GT(s.windows, 0u);
  EXPECT_TRUE(s.target_exited);
  EXPECT_EQ(s.target_exit_status, 0);
}

// exec: the tracer follows the new image (windows go on), and the target, which exits at the
// end, is reaped by its own parent (us) with its own status.
TEST(PtraceBurstsFaults, FollowsExecAndTheTargetIsReapedByItsParent) {
  Churn churn({"--seconds", "3", "--exec-after", "1"});
  ASSERT_GT(churn.pid, 0);
  Collected got;
  std::atomic<uint64_t> execs{0};
  PtraceBurstSink sink = got.Sink();
  sink.on_exec = [&] { ++execs; };
  auto c = PtraceBurstCollector::Start(Options(churn.pid), sink);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int st = 0;
  churn.Finish(&st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
  ASSERT_TRUE((*c)->WaitFinished(5000));
  const PtraceBurstStats s = (*c)->Stop();
  EXPECT_EQ(s.execs, 1u);
  EXPECT_EQ(execs.load(), 1u);
  EXPECT_TRUE(s.target_exited);
  // Windows from after the exec: bursts went on in the new image.
  std::lock_guard<std::mutex> lock(got.mu);
  ASSERT_FALSE(got.windows.empty());
  EXPECT_GT(got.windows.back().time_ns, got.windows.front().time_ns + 1'200'000'000u);
}

// int3 stepping while the target forks: each child gets a copy of the text as it was, int3s
// included; the tracer restores them in every child before it runs, so no child dies of one.
TEST(PtraceBurstsFaults, ForkChildrenNeverMeetAnInt3) {
  if (!CachedStepProbe().Works(StepMode::kInt3))
    GTEST_SKIP() << "int3 stepping does not work here: "
                 << CachedStepProbe().int3_breakpoints.detail;
  Churn churn({"--forks", "100", "--seconds", "4"});
  ASSERT_GT(churn.pid, 0);
  usleep(200000);
  PtraceBurstOptions o = Options(churn.pid);
  o.step_mode = StepMode::kInt3;
  o.bursts_per_second = 500;
  o.max_stopped_fraction = 0.5;
  Collected got;
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int st = 0;
  const std::string out = churn.Finish(&st);
  ASSERT_TRUE((*c)->WaitFinished(5000));
  const PtraceBurstStats s = (*c)->Stop();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a child died: " << out;
  EXPECT_NE(out.find("bad_children 0\ntotal"), std::string::npos) << out;
  EXPECT_GT(s.windows, 20u);
  EXPECT_GT(s.int3_writes, 0u);
  std::printf("forks cleaned %llu, int3 parked %llu, event stops %llu\n",
              (unsigned long long)s.forks_cleaned, (unsigned long long)s.int3_parked,
              (unsigned long long)s.event_stops);
}

// A mechanism that passed the probe and then fails (here: a probe cache that says debug
// registers fire, on a host where they never do, simulated): legs time out, the tracer drops
// to int3, windows go on, and a stop still ends it within a second.
TEST(PtraceBurstsFaults, MechanismThatStopsWorkingFallsBack) {
  const StepProbeResult real = CachedStepProbe();
  if (!real.Works(StepMode::kInt3)) GTEST_SKIP() << "needs int3 to fall back to";
  HostQuirks quirks;
  quirks.no_dr_breakpoints = true;
  StepProbeResult lie = real;
  lie.dr_breakpoints.works = true;
  lie.dr_breakpoints.detail = "fire (a lie for this test)";
  lie.dr_leg_ns = 20000;
  const std::string cache = ::testing::TempDir() + "step-probe-lie";
  {
    std::ofstream f(cache);
    f << "key=" << StepProbeCacheKey(quirks) << "\n" << lie.Serialize();
  }
  setenv("PATHPROF_STEP_PROBE_CACHE", cache.c_str(), 1);
  setenv(kSimulateQuirksEnv, "no-dr-breakpoints", 1);
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  Collected got;
  PtraceBurstOptions o = Options(target);
  o.step_mode = StepMode::kBreakpoints;
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  unsetenv("PATHPROF_STEP_PROBE_CACHE");
  unsetenv(kSimulateQuirksEnv);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->step_mode(), StepMode::kBreakpoints);
  ASSERT_TRUE(WaitFor([&] { return got.size() >= 10; }, 20000));
  PtraceBurstStats s;
  EXPECT_LT(TimedStopNs(**c, &s), 1'000'000'000u);
  EXPECT_EQ(s.step_mode_fallbacks, 1u);
  EXPECT_EQ(static_cast<StepMode>(s.step_mode), StepMode::kInt3);
  EXPECT_GE(s.aborted_timeout, 1u);
  EXPECT_TRUE(s.detached);
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

// Stop() is bounded while bursts run back to back, in every mechanism that works here.
TEST(PtraceBurstsFaults, StopEndsWithinOneSecondInEveryMode) {
  const StepProbeResult probe = CachedStepProbe();
  for (StepMode mode : {StepMode::kSingleStep, StepMode::kBreakpoints, StepMode::kInt3}) {
    if (!probe.Works(mode)) continue;
    pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
    ASSERT_GT(target, 0);
    Collected got;
    PtraceBurstOptions o = Options(target);
    o.step_mode = mode;
    o.bursts_per_second = 5000;
    o.max_stopped_fraction = 0.9;
    auto c = PtraceBurstCollector::Start(o, got.Sink());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE(WaitFor([&] { return got.size() >= 5; }, 20000)) << StepModeName(mode);
    PtraceBurstStats s;
    EXPECT_LT(TimedStopNs(**c, &s), 1'000'000'000u) << StepModeName(mode);
    EXPECT_TRUE(s.detached) << StepModeName(mode);
    EXPECT_FALSE((*c)->killed());
    EXPECT_TRUE(RunsFreely(target)) << StepModeName(mode);
    KillAndReap(target);
  }
}

}  // namespace
}  // namespace pathprof::stepping
