// Snapshot windows (no stop) against stop-and-emulate windows taken at the same instant, on a
// real child under the real eBPF sampler (tests/collectors/snapshot_verify.h says how). What a
// wrong implementation gets wrong: a snapshot window that differs from the live one anywhere
// (a byte served that the sample did not hold, a register mapped to the wrong place, a syscall
// sample started at the wrong place), or one that ends at once (no tracking of unknown bytes,
// no image pages).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "common/spawn.h"
#include "pathprof/collectors/snapshot_windows.h"
#include "snapshot_verify.h"

namespace pathprof::collectors {
namespace {

// The example programs are built beside the tests.
std::string ExampleBinary(const std::string& name) {
  return std::string(PATHPROF_BIN_DIR) + "/" + name;
}

// A child running `argv`, seized (not stopped); killed at the end.
class SeizedChild {
 public:
  explicit SeizedChild(const std::vector<std::string>& argv) {
    pid_ = testing::SpawnArgv(argv);
    usleep(100'000);  // past start-up
    ok_ = pid_ > 0 && ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) == 0;
  }
  ~SeizedChild() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, __WALL);
  }
  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

std::string Describe(const verify::Result& r) {
  std::string s = "stops " + std::to_string(r.stops) + ", compared " + std::to_string(r.compared) +
                  ", identical " + std::to_string(r.identical) + " (wrong past a fault " +
                  std::to_string(r.past_a_fault) + "), registers differ " +
                  std::to_string(r.registers_differ) + ", no record " +
                  std::to_string(r.no_record) + ", in a mapping call " +
                  std::to_string(r.in_mapping_syscall) + ", median taken " +
                  std::to_string(verify::Result::Median(r.taken)) + "; ends:";
  for (int e = 0; e < emulator::kEmulationEndCount; ++e)
    if (r.ends[static_cast<size_t>(e)])
      s += " " + std::string(emulator::EmulationEndName(static_cast<emulator::EmulationEnd>(e))) +
           " " + std::to_string(r.ends[static_cast<size_t>(e)]);
  for (const std::string& d : r.differences) s += "\n  " + d;
  return s;
}

// 150 windows of `argv`, seized, compared at the same instant; printed for the log.
verify::Result VerifyExample(const std::vector<std::string>& argv) {
  SeizedChild child(argv);
  verify::Result r;
  if (!child.ok()) {
    r.error = "could not start and seize " + argv[0];
    return r;
  }
  verify::Options opt;
  opt.windows = 150;
  r = verify::Run(child.pid(), opt);
  std::printf("%s\n", Describe(r).c_str());
  return r;
}

// The hot loop reads one data page that feeds no branch: its snapshot windows, with the default
// settings (registers' bytes, no hints), run the whole 32 taken branches, as the live ones.
TEST(SnapshotWindows, HotLoopWindowsAreTheLiveWindows) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace)";
  const verify::Result r = VerifyExample({ExampleBinary("example_hotloop_static"), "2000000000"});
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.compared, 100u) << Describe(r);
  EXPECT_EQ(r.wrong(), 0u) << Describe(r);
  EXPECT_GE(verify::Result::Median(r.taken), 32u) << Describe(r);
  EXPECT_GT(r.page_sources[static_cast<size_t>(SnapshotPageSource::kImage)], 0u)
      << "code comes from the executable's file";
  EXPECT_EQ(r.sampler.verify_signals_failed, 0u);
}

// A child that spends much of its time inside read(2) of /dev/zero (the kernel copying): its
// samples taken there start at the call's return with rax unknown, and none of the memory they
// copied trusted (read() writes it meanwhile); a loop that branches on what it read follows.
[[noreturn]] void ReadZeroLoop() {
  static char buf[1 << 16];
  const int fd = open("/dev/zero", O_RDONLY);
  uint64_t sum = 0;
  for (;;) {
    const ssize_t got = read(fd, buf, sizeof buf);
    for (ssize_t i = 0; i < got; i += 4093)
      if (buf[i] == 0) sum += static_cast<uint64_t>(i);
    asm volatile("" : : "r"(sum));
  }
}

TEST(SnapshotWindows, SamplesInsideSystemCallsStartAtTheirReturn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace)";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ReadZeroLoop();
  usleep(50'000);
  ASSERT_EQ(ptrace(PTRACE_SEIZE, pid, nullptr, nullptr), 0);
  verify::Options opt;
  opt.windows = 80;
  opt.max_seconds = 20;
  const verify::Result r = verify::Run(pid, opt);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, __WALL);
  ASSERT_TRUE(r.error.empty()) << r.error;
  std::printf("%s\n", Describe(r).c_str());
  ASSERT_GE(r.compared, 40u) << Describe(r);
  EXPECT_EQ(r.wrong(), 0u) << Describe(r);
  EXPECT_GT(r.in_syscall, 0u) << Describe(r);
}

// Heap sort reads its array everywhere: windows end where a comparison needs a byte the sample
// did not copy. Shorter, never different.
TEST(SnapshotWindows, HeapSortWindowsEndEarlyButNeverDiffer) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace)";
  const verify::Result r = VerifyExample({ExampleBinary("example_heapsort_static"), "200000000"});
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.compared, 100u) << Describe(r);
  EXPECT_EQ(r.wrong(), 0u) << Describe(r);
}

// Code a snapshot cannot trust: an RWX page rewritten every iteration, code regenerated at the
// same address every millisecond (anonymous, moving instruction boundaries, through a memfd's
// second view). Their windows end where the code or data is not in the snapshot, or match the
// live window: never differ. Pages made inaccessible every round (example_guard --toggle-load):
// the sampler cannot read the range around the register that points there, and says so, so the
// window ends at the load (and a sample inside the mprotect call starts none). Pages made
// read-only every round (--toggle-store): the range reads fine, but each record carries the
// process's mapping sequence, and the image's maps (read at another time) describe no sample
// of a process that changes them every round, so a store into any page ends the window
// (protection_unknown) instead of running past the fault the thread took (2-4 of 30 windows
// did, on 2026-12-03, before the sequence was recorded).
TEST(SnapshotWindows, HostileCodeEndsOrMatchesNeverDiffers) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace)";
  // churn execs itself after 2 s: after the collector's first samples even where loading the
  // sampler is slow (a sanitizer build beside other tests took over 0.3 s).
  const std::vector<std::vector<std::string>> programs = {
      {"example_selfmod"},
      {"example_jit"},
      {"example_jit", "--layouts"},
      {"example_jit", "--memfd"},
      {"example_guard", "--toggle-load"},
      {"example_guard", "--toggle-store"},
  };
  for (const auto& args : programs) {
    std::vector<std::string> argv = {ExampleBinary(args[0]), "--seconds", "60"};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    SeizedChild child(argv);
    ASSERT_TRUE(child.ok()) << args[0];
    verify::Options opt;
    opt.windows = 30;
    opt.max_seconds = 10;
    const verify::Result r = verify::Run(child.pid(), opt);
    std::string name;
    for (const std::string& a : args) name += a + " ";
    ASSERT_TRUE(r.error.empty()) << name << r.error;
    std::printf("%s: %s\n", name.c_str(), Describe(r).c_str());
    EXPECT_GE(r.compared, 15u) << name << Describe(r);
    EXPECT_EQ(r.wrong(), 0u) << name << Describe(r);
  }
}

// The source itself: no ptrace anywhere, the process already traced by another tracer (a
// helper process that seized it, as strace -p would), windows still come, exact as the verify
// tests show, and every sample is accounted for.
TEST(SnapshotWindowCollector, WindowsOfAProcessAnotherTracerHolds) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  const pid_t target = fork();
  ASSERT_GE(target, 0);
  if (target == 0) {
    execl(ExampleBinary("example_hotloop_static").c_str(), "example_hotloop_static", "2000000000",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t tracer = fork();
  ASSERT_GE(tracer, 0);
  if (tracer == 0) {  // holds the target as its tracer until killed
    const char ok = ptrace(PTRACE_SEIZE, target, nullptr, nullptr) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &ok, 1);
    for (;;) pause();
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(ok, 'y');
  EXPECT_NE(ptrace(PTRACE_SEIZE, target, nullptr, nullptr), 0) << "already traced";

  SnapshotWindowOptions opt;
  opt.pids = {static_cast<uint32_t>(target)};
  opt.frequency_hz = 499;
  std::vector<BranchBatch> windows;
  std::mutex mu;
  auto collector = SnapshotWindowCollector::Start(opt, [&](const BranchBatch& b) {
    std::lock_guard<std::mutex> lock(mu);
    windows.push_back(b);
  });
  ASSERT_TRUE(collector.ok()) << collector.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    usleep(50'000);
    std::lock_guard<std::mutex> lock(mu);
    if (windows.size() >= 232) break;
  }
  (*collector)->Flush();
  const SnapshotWindowStats st = (*collector)->stats();
  collector->reset();
  kill(tracer, SIGKILL);
  waitpid(tracer, nullptr, 0);
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);

  ASSERT_GE(windows.size(), 232u);
  // A process's first windows end early while the collector learns the pages its code runs
  // from (its hint pages reach the BPF side after the helper reports them; under load more
  // samples are taken before they do). The hybrid source judges a process on its newer 32 of
  // 64 windows for that reason, so the warm-up must end within the first 32.
  size_t warm_up = 0;
  size_t full_after = 0;
  for (const BranchBatch& b : windows) {
    EXPECT_EQ(b.pid, static_cast<uint32_t>(target));
    EXPECT_TRUE(b.window);
    EXPECT_EQ(b.stack.regs.size(), 17u) << "the sample's registers give the window's context";
    uint32_t taken = 0;
    for (const BranchEvent& e : b.events) taken += e.taken;
    if (full_after == 0 && taken != 32) ++warm_up;
    full_after += taken == 32;
  }
  EXPECT_LE(warm_up, 32u) << "windows before the first full one";
  EXPECT_GE(full_after, (windows.size() - warm_up) * 95 / 100)
      << "after the warm-up, the hot loop's windows run 32 taken branches";
  EXPECT_EQ(st.samples, st.windows + st.no_snapshot + st.in_mapping_syscall +
                            st.dropped_queue_full + st.budget_count + st.budget_cpu +
                            st.own_process + st.lost_emulator_gone + st.after_stop + st.queued);
  uint64_t ended = 0;
  for (uint64_t n : st.ends) ended += n;
  EXPECT_EQ(ended, st.windows) << "every window's end counted by its reason";
  EXPECT_GT(st.image_pages_from_files, 0u);
}

// Bad input for the source: threads that end while their samples wait in the queue (and a
// process killed with samples queued), threads and children that come and go with an exec
// midway, code regenerated at the same address every millisecond (the PC's page rewritten
// right after the sample), a page of code rewritten every iteration. Each sample becomes a
// window that ends by a counted reason, or is counted as dropped; nothing crashes (this runs
// in the sanitizer build too), and the counts add up to the samples taken.
TEST(SnapshotWindowCollector, EverySampleOfHostileProgramsIsAccountedFor) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  const std::vector<std::vector<std::string>> programs = {
      {"example_thread_exit", "--seconds", "60", "--workers", "4"},
      {"example_churn", "--threads", "200", "--forks", "50", "--seconds", "60", "--exec-on-usr1"},
      {"example_jit", "--seconds", "60"},
      {"example_selfmod", "--seconds", "60"},
  };
  for (const auto& args : programs) {
    std::vector<std::string> argv = args;
    argv[0] = ExampleBinary(args[0]);
    const pid_t target = testing::SpawnArgv(argv);
    ASSERT_GE(target, 0);
    SnapshotWindowOptions opt;
    opt.pids = {static_cast<uint32_t>(target)};
    opt.follow_children = true;
    opt.queue_samples = 64;  // small, so that some samples wait and the queue overflows
    std::atomic<uint64_t> handed{0};
    auto collector = SnapshotWindowCollector::Start(
        opt, [&](const BranchBatch& b) { handed += b.events.empty() ? 0 : 1; });
    ASSERT_TRUE(collector.ok()) << args[0] << ": " << collector.status().ToString();
    // Until 300 windows (and churn's exec) were seen: well under a second each at 999 Hz a
    // thread. Churn execs when told, once 50 of its windows were seen: the collector must know
    // the program before the exec to see one (Start alone took 2-4 s in the sanitizer build
    // beside two busy loops, so an exec at a fixed time could come before the first sample).
    // At most 10 s, 30 s for churn.
    const bool churn = args[0] == "example_churn";
    bool exec_asked = false;
    for (int i = 0; i < (churn ? 600 : 200); ++i) {
      const SnapshotWindowStats now = (*collector)->stats();
      if (churn && !exec_asked && now.windows >= 50) {
        kill(target, SIGUSR1);
        exec_asked = true;
      }
      if (now.windows >= 300 && (!churn || now.execs >= 1)) break;
      usleep(50'000);
    }
    // Killed with samples in the queue: the worker emulates them over a process that is gone.
    kill(target, SIGKILL);
    waitpid(target, nullptr, 0);
    (*collector)->Flush();
    const SnapshotWindowStats st = (*collector)->stats();
    collector->reset();
    std::string ends;
    uint64_t ended = 0;
    for (int e = 0; e < emulator::kEmulationEndCount; ++e) {
      const uint64_t n = st.ends[static_cast<size_t>(e)];
      ended += n;
      if (n)
        ends += " " +
                std::string(emulator::EmulationEndName(static_cast<emulator::EmulationEnd>(e))) +
                " " + std::to_string(n);
    }
    std::printf(
        "%s: samples %llu, windows %llu (%llu handed on), no snapshot %llu, queue full "
        "%llu, execs %llu, evicted %llu, emulator failures %llu (%llu samples lost), ringbuf "
        "full %llu; ends:%s\n",
        args[0].c_str(), (unsigned long long)st.samples, (unsigned long long)st.windows,
        (unsigned long long)handed.load(), (unsigned long long)st.no_snapshot,
        (unsigned long long)st.dropped_queue_full, (unsigned long long)st.execs,
        (unsigned long long)st.processes_evicted, (unsigned long long)st.emulator_failures,
        (unsigned long long)st.lost_emulator_gone, (unsigned long long)st.ringbuf_full,
        ends.c_str());
    EXPECT_GT(st.windows, 50u) << args[0];
    EXPECT_EQ(st.samples, st.windows + st.no_snapshot + st.in_mapping_syscall +
                              st.dropped_queue_full + st.budget_count + st.budget_cpu +
                              st.own_process + st.lost_emulator_gone + st.after_stop + st.queued)
        << args[0];
    EXPECT_EQ(ended, st.windows) << args[0] << ": every window's end counted by its reason";
    EXPECT_LE(handed.load(), st.windows) << args[0];
    // example_churn execs itself: what was kept of the old program is dropped.
    if (churn) {
      EXPECT_TRUE(exec_asked) << "fewer than 50 windows of churn in 30 s";
      EXPECT_GE(st.execs, 1u);
    }
  }
}

}  // namespace
}  // namespace pathprof::collectors
