// Live test of the eBPF stack sampler: real program, real perf events, a real child process.
#include "pathprof/collectors/ebpf_stack_sampler.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "online_cpus.h"

namespace pathprof::collectors {

// The child spins here; exported (ENABLE_EXPORTS) so dladdr1 can report the symbol's size.
extern "C" __attribute__((noinline)) void PathprofTestSpinHere(volatile uint64_t* counter) {
  for (;;) *counter = *counter * 6364136223846793005ull + 1442695040888963407ull;
}

namespace {

TEST(OnlineCpus, ParsesKernelRanges) {
  auto cpus = ParseCpuList("0-2,5,7-8\n");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 5, 7, 8}));
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("x").ok());
  auto online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  EXPECT_EQ(static_cast<long>(online->size()), sysconf(_SC_NPROCESSORS_ONLN));
}

TEST(EbpfStackSampler, RejectsAbsurdFrequency) {
  EbpfSamplerConfig cfg;
  cfg.frequency_hz = 0;
  auto s = EbpfStackSampler::Start(cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
}

TEST(EbpfStackSampler, HottestLeafOfASpinningChildIsItsSpinFunction) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  Dl_info info{};
  void* extra = nullptr;
  ASSERT_NE(dladdr1(reinterpret_cast<void*>(&PathprofTestSpinHere), &info, &extra, RTLD_DL_SYMENT),
            0);
  const auto* sym = static_cast<const ElfW(Sym)*>(extra);
  ASSERT_NE(sym, nullptr);
  const uint64_t lo = reinterpret_cast<uint64_t>(&PathprofTestSpinHere);
  const uint64_t hi = lo + sym->st_size;
  ASSERT_GT(sym->st_size, 0u);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile uint64_t counter = 1;
    PathprofTestSpinHere(&counter);
  }
  EbpfSamplerConfig cfg;
  cfg.frequency_hz = 499;
  cfg.pids = {static_cast<uint32_t>(child)};
  auto sampler = EbpfStackSampler::Start(cfg);
  if (!sampler.ok()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    FAIL() << sampler.status().ToString();
  }
  int total = 0, in_spin = 0, wrong_pid = 0;
  auto sink = [&](const RawStackSample& s) {
    ++total;
    if (s.pid != static_cast<uint32_t>(child)) ++wrong_pid;
    if (!s.user.empty() && s.user[0] >= lo && s.user[0] < hi) ++in_spin;
  };
  // Samples follow the child's CPU time, which a loaded machine rations: sample until there are
  // enough for the 80% figure to mean something, or give up after 20 s.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (total < 300 && std::chrono::steady_clock::now() < deadline)
    ASSERT_TRUE((*sampler)->Poll(100, sink).ok());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE((*sampler)->Drain(sink).ok());

  EbpfSamplerStats st = (*sampler)->stats();
  EXPECT_EQ(wrong_pid, 0) << "the in-kernel pid filter let other processes through";
  EXPECT_GE(total, 300) << "499 Hz on a CPU-bound child should reach 300 samples well within 20 s";
  EXPECT_GE(in_spin, total * 8 / 10) << in_spin << " of " << total << " in the spin function";
  EXPECT_EQ(st.delivered, static_cast<uint64_t>(total));
  EXPECT_EQ(st.submitted, st.delivered) << "every submitted sample must reach user space";
  EXPECT_EQ(st.ringbuf_full, 0u);
  EXPECT_EQ(st.events, st.idle + st.filtered + st.thinned + st.filtered_credentials +
                           st.ringbuf_full + st.submitted);
  EXPECT_GT(st.cpus_attached, 0);
  EXPECT_FALSE(st.event.empty());
}

// A child that recurses `depth` frames of 256 bytes each (about 40 KiB at 150) and spins at
// the bottom.
__attribute__((noinline)) uint64_t DeepThenSpin(int depth) {
  volatile unsigned char pad[256];
  pad[0] = static_cast<unsigned char>(depth);
  if (depth > 0) return DeepThenSpin(depth - 1) + pad[0];
  // Until killed; the flag (never set) gives the recursion a way back, as the compiler wants.
  static volatile bool stop = false;
  volatile uint64_t counter = 1;
  while (!stop) counter = counter * 6364136223846793005ull + 1442695040888963407ull;
  return counter;
}

TEST(EbpfStackSampler, RejectsAStackCopyOutsidePerfsRange) {
  for (uint32_t bytes : {0u, 4095u, 65537u}) {
    EbpfSamplerConfig cfg;
    cfg.copy_user_stacks = true;
    cfg.stack_copy_bytes = bytes;
    auto s = EbpfStackSampler::Start(cfg);
    ASSERT_FALSE(s.ok()) << bytes;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("4096..65536"), std::string::npos) << s.status().message();
  }
}

// The copy is as long as asked, in whole pages from the stack pointer's: at most 4 KiB above the
// stack pointer with 4096, beyond 32 KiB of a 40 KiB-deep stack with 65536.
TEST(EbpfStackSampler, CopiesAsMuchStackAsAsked) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(static_cast<int>(DeepThenSpin(150)));
  for (uint32_t bytes : {4096u, 65536u}) {
    EbpfSamplerConfig cfg;
    cfg.frequency_hz = 499;
    cfg.pids = {static_cast<uint32_t>(child)};
    cfg.copy_user_stacks = true;
    cfg.stack_copy_bytes = bytes;
    auto sampler = EbpfStackSampler::Start(cfg);
    ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
    size_t samples = 0, longest = 0, with_stack = 0;
    auto sink = [&](const RawStackSample& s) {
      ++samples;
      if (!s.stack.empty()) ++with_stack;
      longest = std::max(longest, s.stack.size());
      EXPECT_LE(s.stack.size(), bytes);
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (samples < 100 && std::chrono::steady_clock::now() < deadline)
      ASSERT_TRUE((*sampler)->Poll(100, sink).ok());
    ASSERT_TRUE((*sampler)->Drain(sink).ok());
    EXPECT_GE(samples, 100u);
    EXPECT_GE(with_stack, samples * 9 / 10) << "stack copies missing";
    if (bytes == 65536) {
      EXPECT_GT(longest, 32768u) << "the copy stopped short of what was asked";
    }
    EXPECT_EQ((*sampler)->stats().ringbuf_full, 0u);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace pathprof::collectors
