// The emulator's view of a live stopped child (live_guest.h).
// ThreadGuest::LoadVectorState reads the thread's floating-point state from its XSAVE area
// (PTRACE_GETREGSET NT_X86_XSTATE): the x87 control and status words, MXCSR and the xmm
// registers the child set before it stopped; the x87 words of a thread whose x87 state is in
// its initial configuration (XSTATE_BV bit 0 clear: the area holds no values) are FNINIT's.
// ProcessPages reads a page the child mapped, or made readable, after the maps were read, and
// says a page mapped or made executable since is executable: as the CPU would, not as the
// stale maps say.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "live_guest.h"
#include "pathprof/core/clock.h"

namespace pathprof::stepping {
namespace {

// A child that sets its floating-point state (unless `leave_x87`), stops traced, and waits to
// be killed.
pid_t StoppedChild(bool leave_x87) {
  const pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    if (!leave_x87) {
      const uint16_t cw = 0x0a7f;  // double precision, round up, every exception masked
      const float zero = 0;
      const uint32_t mxcsr = 0x9fc0;  // FTZ, DAZ, every exception masked
      asm volatile("fldcw %0\n\tfnclex\n\tfld1\n\tfdivs %1\n\tfstp %%st(0)\n\tldmxcsr %2"
                   :
                   : "m"(cw), "m"(zero), "m"(mxcsr));
      const uint64_t lanes[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
      asm volatile("movdqu %0, %%xmm3" : : "m"(lanes) : "xmm3");
    }
    raise(SIGSTOP);
    for (;;) pause();
  }
  int status = 0;
  if (pid > 0 && (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))) return -1;
  return pid;
}

void KillChild(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(VectorState, ReadsTheX87WordsMxcsrAndXmmOfAStoppedThread) {
  const pid_t child = StoppedChild(false);
  ASSERT_GT(child, 0);
  ProcessPages pages(child);
  ThreadGuest guest(child, pages);
  emulator::CpuState s;
  ASSERT_TRUE(guest.LoadVectorState(&s));
  KillChild(child);
  EXPECT_EQ(s.fcw, 0x0a7f);
  EXPECT_NE(s.fsw & 0x4, 0) << "the zero-divide flag of 1/0: fsw " << s.fsw;
  EXPECT_EQ(s.mxcsr, 0x9fc0u);
  uint64_t lanes[2];
  std::memcpy(lanes, s.zmm[3].data(), 16);
  EXPECT_EQ(lanes[0], 0x0123456789abcdefull);
  EXPECT_EQ(lanes[1], 0xfedcba9876543210ull);
  EXPECT_TRUE(s.vector_loaded);
}

TEST(VectorState, AnUntouchedX87StateReadsAsAfterFninit) {
  const pid_t child = StoppedChild(true);
  ASSERT_GT(child, 0);
  ProcessPages pages(child);
  ThreadGuest guest(child, pages);
  emulator::CpuState s;
  s.fcw = 0x1234;  // stale values that must not survive
  s.fsw = 0x5678;
  ASSERT_TRUE(guest.LoadVectorState(&s));
  KillChild(child);
  // What the thread would read itself: this process's own words are FNINIT's too (a forked
  // child inherits them), unless the test runner changed them.
  uint16_t cw = 0, sw = 0;
  asm volatile("fnstcw %0\n\tfnstsw %1" : "=m"(cw), "=m"(sw));
  EXPECT_EQ(s.fcw, cw);
  EXPECT_EQ(s.fsw, sw);
}

// A traced child changes its mappings behind a ProcessPages whose maps were read before: the
// child runs `before` (which returns what `after` needs) and stops; RunChange reads the maps,
// resumes it; it runs `after`, tells the N addresses `after` returns and stops again.
template <size_t N>
struct MapsChange {
  pid_t child = -1;
  int report[2] = {-1, -1};
  std::array<uint64_t, N> addresses{};

  ~MapsChange() {
    if (child > 0) KillChild(child);
    for (int fd : report)
      if (fd >= 0) close(fd);
  }

  template <typename Before, typename After>
  void Start(Before before, After after) {
    ASSERT_EQ(pipe(report), 0);
    child = fork();
    if (child == 0) {
      ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      auto state = before();
      raise(SIGSTOP);
      const std::array<uint64_t, N> told = after(state);
      if (write(report[1], told.data(), sizeof told) != sizeof told) _exit(1);
      raise(SIGSTOP);
      for (;;) pause();
    }
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSTOPPED(status));
  }

  // The maps as a window starts now; then the child changes them at once, well within the
  // interval in which a miss does not read the maps again.
  void RunChange(ProcessPages& pages) {
    pages.Refresh(MonotonicNs(), 0);
    ASSERT_EQ(ptrace(PTRACE_CONT, child, nullptr, nullptr), 0);
    ASSERT_EQ(read(report[0], addresses.data(), sizeof addresses),
              static_cast<ssize_t>(sizeof addresses));
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSTOPPED(status));
  }
};

void* MapPage(int prot) {
  return mmap(nullptr, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

uint64_t Address(void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// The child maps a page and makes a PROT_NONE page readable, writing a pattern to both.
TEST(ProcessPages, ReadsPagesMappedOrMadeReadableSinceTheMapsWereRead) {
  MapsChange<2> change;
  ASSERT_NO_FATAL_FAILURE(change.Start([] { return MapPage(PROT_NONE); },
                                       [](void* reserved) {
                                         void* fresh = MapPage(PROT_READ | PROT_WRITE);
                                         mprotect(reserved, 4096, PROT_READ | PROT_WRITE);
                                         std::memset(fresh, 0xa5, 4096);
                                         std::memset(reserved, 0x3c, 4096);
                                         return std::array{Address(fresh), Address(reserved)};
                                       }));
  ProcessPages pages(change.child);
  ASSERT_NO_FATAL_FAILURE(change.RunChange(pages));
  const auto& addresses = change.addresses;
  uint8_t page[4096];
  bool stable = true;
  EXPECT_TRUE(pages.Read(addresses[0], page, &stable)) << "a page mapped since the maps were read";
  EXPECT_EQ(page[0], 0xa5);
  EXPECT_EQ(page[4095], 0xa5);
  EXPECT_FALSE(stable) << "anonymous memory is never kept across windows";
  EXPECT_TRUE(pages.Read(addresses[1], page, &stable)) << "a PROT_NONE page made readable since";
  EXPECT_EQ(page[100], 0x3c);
  // And a page that is not mapped at all stays unreadable.
  EXPECT_FALSE(pages.Read(addresses[0] ^ (uint64_t{1} << 44), page, &stable));
}

// A window that jumps into code the loader mapped a moment ago ran on in the CPU: the emulator
// ended it as not_executable by the stale maps (6-10 of ~47 windows of examples/threads on a
// fresh AMD EPYC KVM guest) until a "no" was asked of the kernel. The child maps a page of
// code, makes a readable page executable, and has a writable page beside them.
TEST(ProcessPages, CodeMappedOrMadeExecutableSinceTheMapsWereReadIsExecutable) {
  MapsChange<3> change;
  ASSERT_NO_FATAL_FAILURE(change.Start(
      [] {
        return std::array{MapPage(PROT_READ), MapPage(PROT_READ | PROT_WRITE)};
      },
      [](std::array<void*, 2> before) {
        void* code = MapPage(PROT_READ | PROT_EXEC);
        mprotect(before[0], 4096, PROT_READ | PROT_EXEC);
        return std::array{Address(code), Address(before[0]), Address(before[1])};
      }));
  ProcessPages pages(change.child);
  ASSERT_NO_FATAL_FAILURE(change.RunChange(pages));
  const auto& addresses = change.addresses;
  EXPECT_TRUE(pages.Executable(addresses[0])) << "code mapped since the maps were read";
  EXPECT_TRUE(pages.Executable(addresses[1])) << "a readable page made executable since";
  EXPECT_FALSE(pages.Executable(addresses[2])) << "writable data the CPU would not execute";
  EXPECT_FALSE(pages.Executable(addresses[0] ^ (uint64_t{1} << 44))) << "nothing mapped there";
}

}  // namespace
}  // namespace pathprof::stepping
