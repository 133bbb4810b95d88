// The breakpoint block stepper against single stepping, event for event: two runs of the
// deterministic hot-loop example, each stopped at the entry of hot() by a debug-register
// breakpoint, are stepped through the same sequence of consecutive windows, one run with
// PTRACE_SINGLESTEP and one with planted breakpoints. Every window must hold the same events
// (addresses, kinds, taken flags, instruction counts), and the threads must end at the same rip.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

#include "pathprof/collectors/window_stepper.h"
#include "ptrace_burst_test_util.h"

namespace pathprof::collectors {
namespace {

uint64_t SymbolAddress(const std::string& path, const std::string& name) {
  uint64_t out = 0;
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      gelf_getsym(data, static_cast<int>(i), &sym);
      if (name == elf_strptr(elf, sh.sh_link, sym.st_name)) out = sym.st_value;
    }
  }
  elf_end(elf);
  close(fd);
  return out;
}

long Dr(int i) {
  return static_cast<long>(offsetof(struct user, u_debugreg) + i * sizeof(long));
}

// fork + PTRACE_TRACEME + exec, then run to `stop_at` with a breakpoint in DR0.
pid_t StartStoppedAt(const std::string& exe, uint64_t stop_at) {
  pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    execl(exe.c_str(), exe.c_str(), "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) return -1;  // the exec SIGTRAP
  if (ptrace(PTRACE_POKEUSER, pid, reinterpret_cast<void*>(Dr(0)),
             reinterpret_cast<void*>(stop_at)) != 0 ||
      ptrace(PTRACE_POKEUSER, pid, reinterpret_cast<void*>(Dr(7)), reinterpret_cast<void*>(1)) !=
          0 ||
      ptrace(PTRACE_CONT, pid, nullptr, nullptr) != 0)
    return -1;
  if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) return -1;
  ptrace(PTRACE_POKEUSER, pid, reinterpret_cast<void*>(Dr(7)), nullptr);
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
  DebugRegisterCache dr;  // the test's own DR0 write is unknown to it: it rewrites all
  for (uint32_t w : sizes) {
    WindowStepOptions o;
    o.mode = mode;
    o.window_taken = w;
    SteppedWindow sw = StepThreadWindow(pid, Rip(pid), reader, o, &dr);
    run.stops += sw.single_steps + sw.breakpoint_legs;
    run.windows.push_back(std::move(sw));
  }
  run.final_rip = Rip(pid);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  return run;
}

TEST(PtraceBurstsStepperTest, BreakpointWindowsEqualSingleStepWindows) {
  const std::string exe = testing::Bin("example_hotloop_static");
  const uint64_t hot = SymbolAddress(exe, "hot");
  ASSERT_NE(hot, 0u);
  // 90 windows of 32 cover hot()'s 2000 iterations, warm(), main's loop and hot() again; then
  // odd sizes, so that windows end mid-plan.
  std::vector<uint32_t> sizes(90, 32);
  for (uint32_t w : {1u, 2u, 3u, 5u, 7u, 11u, 13u, 64u}) sizes.push_back(w);
  SteppedRun step = StepWindows(exe, hot, StepMode::kSingleStep, sizes);
  SteppedRun bp = StepWindows(exe, hot, StepMode::kBreakpoints, sizes);
  ASSERT_EQ(step.windows.size(), sizes.size());
  ASSERT_EQ(bp.windows.size(), sizes.size());
  uint64_t events = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const SteppedWindow& a = step.windows[i];
    const SteppedWindow& b = bp.windows[i];
    EXPECT_EQ(a.end, WindowEnd::kComplete) << "window " << i;
    EXPECT_EQ(b.end, WindowEnd::kComplete) << "window " << i;
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
  // taken branch: 8 single steps, at most 2 breakpoint legs.
  std::printf("stops: single-step %llu, breakpoints %llu\n", (unsigned long long)step.stops,
              (unsigned long long)bp.stops);
  EXPECT_LT(bp.stops * 3, step.stops);
}

}  // namespace
}  // namespace pathprof::collectors
