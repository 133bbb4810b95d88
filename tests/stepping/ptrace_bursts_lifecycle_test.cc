// The burst collector against live processes: windows are exact and well formed, and whatever
// happens (normal stop, the collector's host killed mid-burst, the target exiting, another
// tracer already present) no thread is left stopped or traced.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/ptrace.h>

#include <mutex>
#include <optional>
#include <vector>

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

PtraceBurstOptions FastOptions(pid_t pid) {
  PtraceBurstOptions o;
  o.pid = pid;
  o.bursts_per_second = 200;
  o.max_stopped_fraction = 0.5;
  o.seed = 7;
  return o;
}

// Runs bursts on the hot loop in `mode` (nullopt: auto) until 20 windows came, stops, and checks
// what every mode must give: exact, complete windows of W taken branches, the counters agreeing
// with the windows, the target detached and running. Returns the stats for the mode's own checks.
PtraceBurstStats ExactHotLoopWindows(std::optional<StepMode> mode) {
  PtraceBurstStats s;
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  EXPECT_GT(target, 0);
  if (target <= 0) return s;
  EXPECT_TRUE(WaitFor([&] { return testing::ReadProcStat(target).cpu_ticks > 0; }, 5000));
  Collected got;
  PtraceBurstOptions o = FastOptions(target);
  o.step_mode = mode;
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) {
    KillAndReap(target);
    return s;
  }
  EXPECT_EQ(testing::TracerPid(target), (*c)->tracer_pid());
  EXPECT_TRUE(WaitFor([&] { return got.size() >= 20; }, 20000));
  s = (*c)->Stop();
  EXPECT_TRUE(s.detached);
  EXPECT_EQ(s.threads_attached, 1u);
  EXPECT_EQ(s.windows, got.size());
  EXPECT_GE(s.bursts, s.windows);
  uint64_t taken = 0, events = 0, instructions = 0, cut_short = 0;
  for (const BranchBatch& b : got.windows) {
    EXPECT_TRUE(b.window);
    EXPECT_TRUE(b.gap_before);
    EXPECT_EQ(b.pid, static_cast<uint32_t>(target));
    EXPECT_EQ(b.tid, static_cast<uint32_t>(target));
    uint64_t t = 0;
    for (size_t i = 0; i < b.events.size(); ++i) {
      const BranchEvent& e = b.events[i];
      t += e.taken;
      instructions += e.instructions;
      EXPECT_GE(e.instructions, 1) << "every event ends a block of at least itself";
      // Exact stream: each event starts where the previous one left off or later, in order.
      if (i > 0) {
        EXPECT_GE(e.from, b.events[i - 1].to) << "window " << b.time_ns << " event " << i;
      }
      if (!e.taken) {
        EXPECT_EQ(e.kind, BranchKind::kConditional);
      }
    }
    // The hot loop makes no system calls, so every window is complete: exactly W taken; but for
    // an emulated window a loaded host cut at the emulator's time limit (the thread waited while
    // the tracer lost its CPU), counted below.
    if (t != 32u) {
      ++cut_short;
      EXPECT_LT(t, 32u);
    } else {
      EXPECT_EQ(b.events.back().taken, true) << "a window ends at its W-th taken branch";
    }
    taken += t;
    events += b.events.size();
  }
  uint64_t time_limit_ends = 0;
  for (size_t i = 0; i < kEmulationEndSlots; ++i)
    if (EmulationEndReason(i) == "time_limit") time_limit_ends = s.emulation_ends[i];
  EXPECT_LE(cut_short, time_limit_ends);
  EXPECT_EQ(s.windows_short, cut_short);
  EXPECT_EQ(s.taken, taken);
  EXPECT_EQ(s.events, events);
  // A window cut short ran instructions after its last branch, which no event carries.
  if (cut_short == 0)
    EXPECT_EQ(s.instructions, instructions);
  else
    EXPECT_GE(s.instructions, instructions);
  EXPECT_EQ(s.step_mode_fallbacks, 0u);
  EXPECT_GT(s.stopped_ns, 0u);
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
  return s;
}

// Auto where the emulator works (the probe checked it against single steps): one stop per
// window, no step and no breakpoint leg at all.
TEST(PtraceBurstsTest, WindowsAreExactAndStopDetachesCleanly) {
  const StepProbeResult probe = CachedStepProbe();
  const PtraceBurstStats s = ExactHotLoopWindows(std::nullopt);
  EXPECT_EQ(static_cast<StepMode>(s.step_mode), probe.BestMode());
  if (probe.BestMode() == StepMode::kEmulate) {
    EXPECT_EQ(s.emulated_windows, s.windows);
    EXPECT_EQ(s.steps, 0u);
    EXPECT_EQ(s.breakpoint_legs, 0u);
  }
}

// Breakpoint legs (debug registers, or int3 where they never fire): far fewer stops than
// instructions (a hot() iteration is 8 instructions and two branches: one or two stops with
// debug registers, two or three with int3, which never plants at a leg's start; only rets and
// indirect branches are single-stepped).
TEST(PtraceBurstsTest, BreakpointLegWindowsAreExactToo) {
  const StepProbeResult probe = CachedStepProbe();
  std::optional<StepMode> legs;
  if (probe.Works(StepMode::kBreakpoints))
    legs = StepMode::kBreakpoints;
  else if (probe.Works(StepMode::kInt3))
    legs = StepMode::kInt3;
  if (!legs) GTEST_SKIP() << "neither breakpoint mechanism works on this host";
  const PtraceBurstStats s = ExactHotLoopWindows(legs);
  EXPECT_EQ(static_cast<StepMode>(s.step_mode), *legs);
  EXPECT_GT(s.breakpoint_legs, 0u);
  EXPECT_EQ(s.emulated_windows, 0u);
  const bool int3 = *legs == StepMode::kInt3;
  EXPECT_LT(s.steps + s.breakpoint_legs, int3 ? 2 * s.events : s.events);
  EXPECT_LT(2 * (s.steps + s.breakpoint_legs), s.instructions);
}

// The collector's host (daemon, pathctl) dies by SIGKILL while bursts run back to back. The
// tracer process notices its control pipe closing, finishes its step and detaches.
TEST(PtraceBurstsTest, KilledCollectorHostLeavesTargetRunning) {
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  for (int round = 0; round < 3; ++round) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t host = fork();
    if (host == 0) {
      close(ready[0]);
      PtraceBurstOptions o = FastOptions(target);
      o.bursts_per_second = 5000;  // bursts back to back: the kill lands mid-burst
      o.max_stopped_fraction = 0.95;
      Collected got;
      auto c = PtraceBurstCollector::Start(o, got.Sink());
      if (!c.ok()) _exit(2);
      while (got.size() < 3) usleep(1000);
      char x = 'r';
      if (write(ready[1], &x, 1) != 1) _exit(3);
      for (;;) pause();
    }
    close(ready[1]);
    char x = 0;
    ASSERT_EQ(read(ready[0], &x, 1), 1) << "the collector did not start in the helper";
    close(ready[0]);
    usleep(20000 + 7000 * round);
    ASSERT_EQ(kill(host, SIGKILL), 0);
    int st;
    ASSERT_EQ(waitpid(host, &st, 0), host);
    EXPECT_TRUE(RunsFreely(target)) << "round " << round;
  }
  KillAndReap(target);
}

TEST(PtraceBurstsTest, TargetExitingMidSessionEndsTheSession) {
  // ~100k rounds of 2500 loop iterations: a fraction of a second to a few seconds.
  pid_t target = Spawn({Bin("example_hotloop_static"), "100000"});
  ASSERT_GT(target, 0);
  Collected got;
  auto c = PtraceBurstCollector::Start(FastOptions(target), got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->WaitFinished(60000)) << "the session did not end with the target";
  PtraceBurstStats s = (*c)->Stop();
  EXPECT_TRUE(s.target_exited);
  EXPECT_EQ(s.target_exit_status, 0);
  EXPECT_EQ(s.threads_exited, 1u);
  EXPECT_GT(s.windows, 0u);
  int st = 0;
  ASSERT_EQ(waitpid(target, &st, 0), target);
  EXPECT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(PtraceBurstsTest, AlreadyTracedTargetIsRefused) {
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  pid_t debugger = fork();
  if (debugger == 0) {
    if (ptrace(PTRACE_SEIZE, target, nullptr, nullptr) != 0) _exit(1);
    for (;;) pause();
  }
  ASSERT_TRUE(WaitFor([&] { return testing::TracerPid(target) == debugger; }, 5000));
  auto c = PtraceBurstCollector::Start(FastOptions(target), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnavailable);
  const std::string msg = c.status().ToString();
  EXPECT_NE(msg.find("already traced by process " + std::to_string(debugger)), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("detach"), std::string::npos) << msg;
  KillAndReap(debugger);
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

TEST(PtraceBurstsTest, SignalsReachTheTarget) {
  pid_t target = Spawn({Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  Collected got;
  auto c = PtraceBurstCollector::Start(FastOptions(target), got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // SIGCONT and SIGWINCH are ignored by default: delivered, they change nothing.
  ASSERT_EQ(kill(target, SIGWINCH), 0);
  ASSERT_TRUE(
      WaitFor([&] { return (*c)->stats().signals_forwarded >= 1 || got.size() > 50; }, 10000));
  // SIGTERM must still kill it: the tracer hands it back rather than swallowing it.
  ASSERT_EQ(kill(target, SIGTERM), 0);
  ASSERT_TRUE((*c)->WaitFinished(10000));
  PtraceBurstStats s = (*c)->Stop();
  EXPECT_GE(s.signals_forwarded, 2u);
  EXPECT_TRUE(s.target_exited);
  EXPECT_EQ(s.target_exit_status, 128 + SIGTERM);
  int st = 0;
  ASSERT_EQ(waitpid(target, &st, 0), target);
  EXPECT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
}

TEST(PtraceBurstsTest, BadTargetsGetClearErrors) {
  auto missing = PtraceBurstCollector::Start(FastOptions(999999999), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  PtraceBurstOptions o = FastOptions(getpid());
  o.window_taken = 0;
  auto bad = PtraceBurstCollector::Start(o, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

// A non-admin's session: the tracer becomes the target's user (run_as) before it attaches,
// which leaves it undumpable, and a probe of its own could not read its probe child's memory
// (emulation and both breakpoint mechanisms found broken: it stepped with single steps). It
// takes the mode this process's probe chooses, as an admin session's tracer does.
TEST(PtraceBurstsTest, TracerRunAsTheUserStepsInTheModeTheProbeChose) {
  const passwd* nobody = getpwnam("nobody");
  if (geteuid() != 0 || nobody == nullptr)
    GTEST_SKIP()
        << "needs root and the user nobody: the tracer becomes nobody to trace its process";
  const std::string uid = std::to_string(nobody->pw_uid), gid = std::to_string(nobody->pw_gid);
  pid_t target = Spawn({"/usr/bin/setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups",
                        Bin("example_hotloop_static"), "0"});
  ASSERT_GT(target, 0);
  ASSERT_TRUE(WaitFor([&] { return testing::ReadProcStat(target).cpu_ticks > 0; }, 5000));
  ASSERT_TRUE(
      WaitFor([&] { return testing::StatusField(target, "Uid").rfind(uid, 0) == 0; }, 5000));
  Collected got;
  PtraceBurstOptions o = FastOptions(target);
  o.run_as = TracerCredentials{nobody->pw_uid, nobody->pw_gid};
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const StepModeChoice choice = ChooseStepMode(std::nullopt, CachedStepProbe());
  ASSERT_TRUE(choice.ok) << choice.reason;
  EXPECT_EQ(StepModeName((*c)->step_mode()), StepModeName(choice.mode)) << choice.reason;
  EXPECT_TRUE(WaitFor([&] { return got.size() >= 5; }, 10000));
  const PtraceBurstStats s = (*c)->Stop();
  EXPECT_TRUE(s.detached);
  EXPECT_GE(s.windows, 5u);
  EXPECT_EQ(StepModeName(static_cast<StepMode>(s.step_mode)), StepModeName(choice.mode));
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

}  // namespace
}  // namespace pathprof::stepping
