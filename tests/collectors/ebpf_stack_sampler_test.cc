// Live test of the eBPF stack sampler: real program, real perf events, a real child process.
#include "pathprof/collectors/ebpf_stack_sampler.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
  EXPECT_EQ(st.events, st.idle + st.filtered + st.ringbuf_full + st.submitted);
  EXPECT_GT(st.cpus_attached, 0);
  EXPECT_FALSE(st.event.empty());
}

}  // namespace
}  // namespace pathprof::collectors
