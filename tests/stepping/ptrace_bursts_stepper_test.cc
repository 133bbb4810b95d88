// The block steppers against single stepping, event for event: runs of the deterministic
// hot-loop example, each stopped at the entry of hot() by an int3 (which every host delivers),
// are stepped through the same sequence of consecutive windows, one run with PTRACE_SINGLESTEP
// and one per breakpoint mechanism (debug registers where the step probe says they fire, int3
// everywhere). Every window must hold the same events (addresses, kinds, taken flags,
// instruction counts), and the threads must end at the same rip.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <vector>

#include "pathprof/core/clock.h"
#include "pathprof/decoders/elf_function_symbols.h"
#include "pathprof/stepping/step_probe.h"
#include "ptrace_burst_test_util.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"
#include "window_stepper.h"

namespace pathprof::stepping {
namespace {

uint64_t SymbolAddress(const std::string& path, const std::string& name) {
  auto f = decoders::ReadFunctionNamed(path, name);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? f->vaddr : 0;
}

// fork + PTRACE_TRACEME + exec, then run to `stop_at` with an int3 planted there.
pid_t StartStoppedAt(const std::string& exe, uint64_t stop_at) {
  pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    execl(exe.c_str(), exe.c_str(), "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) return -1;  // the exec SIGTRAP
  errno = 0;
  const long word = ptrace(PTRACE_PEEKTEXT, pid, reinterpret_cast<void*>(stop_at), nullptr);
  if (errno != 0 ||
      ptrace(PTRACE_POKETEXT, pid, reinterpret_cast<void*>(stop_at),
             reinterpret_cast<void*>((word & ~0xffL) | 0xcc)) != 0 ||
      ptrace(PTRACE_CONT, pid, nullptr, nullptr) != 0)
    return -1;
  if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) return -1;
  user_regs_struct regs;
  ptrace(PTRACE_GETREGS, pid, nullptr, &regs);
  regs.rip = stop_at;
  if (ptrace(PTRACE_SETREGS, pid, nullptr, &regs) != 0 ||
      ptrace(PTRACE_POKETEXT, pid, reinterpret_cast<void*>(stop_at),
             reinterpret_cast<void*>(word)) != 0)
    return -1;
  return pid;
}

uint64_t Rip(pid_t pid) {
  user_regs_struct regs;
  ptrace(PTRACE_GETREGS, pid, nullptr, &regs);
  return regs.rip;
}

struct SteppedRun {
  std::vector<SteppedWindow> windows;
  uint64_t final_rip = 0;
  uint64_t stops = 0;
};

SteppedRun StepWindows(const std::string& exe, uint64_t hot, StepMode mode,
                       const std::vector<uint32_t>& sizes) {
  SteppedRun run;
  pid_t pid = StartStoppedAt(exe, hot);
  EXPECT_GT(pid, 0);
  if (pid <= 0) return run;
  EXPECT_EQ(Rip(pid), hot);
  InstructionReader reader(pid);
  DebugRegisterCache dr;
  SoftwareBreakpoints int3(pid);
  reader.SetBreakpoints(&int3);
  WaitTicker ticker;
  StepContext ctx;
  ctx.reader = &reader;
  ctx.debug_registers = &dr;
  ctx.int3 = mode == StepMode::kInt3 ? &int3 : nullptr;
  for (uint32_t w : sizes) {
    WindowStepOptions o;
    o.mode = mode;
    o.window_taken = w;
    SteppedWindow sw = StepThreadWindow(pid, Rip(pid), ctx, o);
    run.stops += sw.single_steps + sw.breakpoint_legs;
    run.windows.push_back(std::move(sw));
  }
  EXPECT_TRUE(int3.RemoveAll());
  run.final_rip = Rip(pid);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  return run;
}

class StepperTest : public ::testing::TestWithParam<StepMode> {};

TEST_P(StepperTest, BlockStepWindowsEqualSingleStepWindows) {
  const StepMode mode = GetParam();
  const StepProbeResult probe = CachedStepProbe();
  if (!probe.Works(mode))
    GTEST_SKIP() << StepModeName(mode) << " does not work on this host: " << probe.Of(mode).detail;
  const std::string exe = testing::Bin("example_hotloop_static");
  const uint64_t hot = SymbolAddress(exe, "hot");
  ASSERT_NE(hot, 0u);
  // 90 windows of 32 cover hot()'s 2000 iterations, warm(), main's loop and hot() again; then
  // odd sizes, so that windows end mid-plan.
  std::vector<uint32_t> sizes(90, 32);
  for (uint32_t w : {1u, 2u, 3u, 5u, 7u, 11u, 13u, 64u}) sizes.push_back(w);
  SteppedRun step = StepWindows(exe, hot, StepMode::kSingleStep, sizes);
  SteppedRun bp = StepWindows(exe, hot, mode, sizes);
  ASSERT_EQ(step.windows.size(), sizes.size());
  ASSERT_EQ(bp.windows.size(), sizes.size());
  uint64_t events = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const SteppedWindow& a = step.windows[i];
    const SteppedWindow& b = bp.windows[i];
    EXPECT_EQ(a.end, WindowEnd::kComplete) << "window " << i;
    EXPECT_EQ(b.end, WindowEnd::kComplete) << "window " << i << ": " << WindowEndName(b.end);
    EXPECT_EQ(a.taken, sizes[i]);
    EXPECT_EQ(b.taken, sizes[i]);
    EXPECT_EQ(a.instructions, b.instructions) << "window " << i;
    ASSERT_EQ(a.events.size(), b.events.size()) << "window " << i;
    for (size_t j = 0; j < a.events.size(); ++j)
      ASSERT_EQ(a.events[j], b.events[j])
          << "window " << i << " event " << j << ": from " << std::hex << a.events[j].from << " vs "
          << b.events[j].from;
    events += a.events.size();
    EXPECT_EQ(a.breakpoint_legs, 0u);
  }
  EXPECT_EQ(step.final_rip, bp.final_rip);
  // Not-taken conditionals really are in the windows (hot() has one per iteration at least).
  EXPECT_GT(events, 90u * 32u * 3u / 2u);
  // The point of the exercise: far fewer stops. A hot() iteration is 8 instructions and one
  // taken branch: 8 single steps, at most 2 breakpoint legs (debug registers; int3 needs one
  // more, as a leg never plants at its own start).
  std::printf("stops: single-step %llu, %s %llu\n", (unsigned long long)step.stops,
              std::string(StepModeName(mode)).c_str(), (unsigned long long)bp.stops);
  EXPECT_LT(bp.stops * (mode == StepMode::kInt3 ? 2 : 3), step.stops);
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, StepperTest,
                         ::testing::Values(StepMode::kBreakpoints, StepMode::kInt3),
                         [](const auto& info) { return std::string(StepModeName(info.param)); });

// A breakpoint that never fires (the host quirk, simulated or real) ends the window as timed
// out within its deadline, with the thread interrupted and stopped: the tracer can go on.
TEST(StepperTimeout, BreakpointsThatNeverFireTimeOutAndLeaveTheThreadStopped) {
  const std::string exe = testing::Bin("example_hotloop_static");
  const uint64_t hot = SymbolAddress(exe, "hot");
  pid_t pid = StartStoppedAt(exe, hot);
  ASSERT_GT(pid, 0);
  InstructionReader reader(pid);
  WaitTicker ticker;
  StepContext ctx;
  ctx.reader = &reader;
  WindowStepOptions o;
  o.mode = StepMode::kBreakpoints;
  o.stop_timeout_ns = 30'000'000;
  // Debug registers armed but never enabled: what the quirky hypervisors do. (PTRACE_TRACEME
  // tracees cannot be PTRACE_INTERRUPTed, so the interrupt fails and the thread is reported
  // running; a SIGSTOP then stops it for the test.)
  ASSERT_TRUE(PokeDebugRegister(pid, 0, hot));
  const uint64_t t0 = MonotonicNs();
  DebugRegisterCache never;
  never.valid = true;
  never.armed = true;  // "already armed": the stepper will not write DR7
  ctx.debug_registers = &never;
  SteppedWindow w = StepThreadWindow(pid, Rip(pid), ctx, o);
  const uint64_t took = MonotonicNs() - t0;
  EXPECT_EQ(w.end, WindowEnd::kTimedOut) << WindowEndName(w.end);
  EXPECT_LT(took, 1'000'000'000u) << "a timed-out leg must end within its deadlines";
  EXPECT_GE(took, 30'000'000u);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
}

}  // namespace
}  // namespace pathprof::stepping
