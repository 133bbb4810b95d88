// Live test of the sampler's snapshots (windows emulated later from a sample, no stop): a real
// child whose registers point at memory filled with a known pattern, real perf events, the real
// BPF program. What a wrong sampler would get wrong: the bytes of each piece (pattern at its
// address), the pieces' split at a page boundary, rflags and fs_base, a hint page unmapped by
// then, the byte cap.
#include <asm/prctl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/collectors/shared_stack_sampler.h"

namespace pathprof::collectors {
namespace {

constexpr uint64_t kPage = 4096;

uint8_t PatternAt(uint64_t address) {
  return static_cast<uint8_t>((address * 2654435761u) >> 13);
}

// What the child tells the parent before it spins.
struct ChildLayout {
  uint64_t a = 0, b = 0, hint = 0, gone = 0, fs_base = 0;
};

uint64_t MapPattern(uint64_t pages) {
  void* p =
      mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) _exit(2);
  auto* bytes = static_cast<uint8_t*>(p);
  for (uint64_t i = 0; i < pages * kPage; ++i)
    bytes[i] = PatternAt(reinterpret_cast<uint64_t>(bytes + i));
  return reinterpret_cast<uint64_t>(p);
}

// rbx points 300 bytes into a's second page (its range lies in one page); r12 50 bytes before
// the end of b's first page (its range crosses into the next: two pieces); rsi 200 bytes past
// rbx (its range overlaps rbx's: only the bytes past rbx's are copied); rax holds no address
// (its range is said to be unreadable).
// Every other general register but rbp and rsp holds 0, so that no leftover pointer (an
// instrumented build leaves some) copies bytes of its own into the ranges under test.
[[noreturn]] void SpinWithRegisters(uint64_t rbx, uint64_t r12) {
  register uint64_t r12_value asm("r12") = r12;
  register uint64_t r8 asm("r8") = 0, r9 asm("r9") = 0, r10 asm("r10") = 0, r11 asm("r11") = 0;
  register uint64_t r13 asm("r13") = 0, r14 asm("r14") = 0, r15 asm("r15") = 0;
  asm volatile("1: pause\n\tjmp 1b"
               :
               : "b"(rbx), "S"(rbx + 200), "r"(r12_value), "a"(12345), "c"(0), "d"(0), "D"(0),
                 "r"(r8), "r"(r9), "r"(r10), "r"(r11), "r"(r13), "r"(r14), "r"(r15));
  __builtin_unreachable();
}

pid_t StartChild(ChildLayout* layout) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    ChildLayout l;
    l.a = MapPattern(3);
    l.b = MapPattern(3);
    l.hint = MapPattern(1);
    l.gone = MapPattern(1);
    munmap(reinterpret_cast<void*>(l.gone), kPage);
    syscall(SYS_arch_prctl, ARCH_GET_FS, &l.fs_base);
    if (write(fds[1], &l, sizeof(l)) != static_cast<ssize_t>(sizeof(l))) _exit(3);
    close(fds[1]);
    SpinWithRegisters(l.a + kPage + 300, l.b + kPage - 50);
  }
  close(fds[1]);
  const bool got = read(fds[0], layout, sizeof(*layout)) == static_cast<ssize_t>(sizeof(*layout));
  close(fds[0]);
  if (!got && child > 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return -1;
  }
  return child;
}

struct Collected {
  int samples = 0, snapshots = 0, in_user = 0;
  std::vector<RawStackSample> kept;  // the first few, whole
};

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The samples taken from `since_ns` (CLOCK_MONOTONIC) on.
Collected Sample(EbpfStackSampler& sampler, int want, uint64_t since_ns = 0) {
  Collected c;
  auto sink = [&](const RawStackSample& s) {
    if (s.time_ns < since_ns) return;
    ++c.samples;
    if (!s.snapshot) return;
    ++c.snapshots;
    if (!s.snapshot->in_kernel) ++c.in_user;
    if (c.kept.size() < 50) c.kept.push_back(s);
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.snapshots < want && std::chrono::steady_clock::now() < deadline)
    if (!sampler.Poll(100, sink).ok()) break;
  (void)sampler.Drain(sink);
  return c;
}

// A 499 Hz sampler of `child` with a 4 KiB stack copy and a snapshot at the default settings.
EbpfSamplerConfig SnapshotConfig(pid_t child) {
  EbpfSamplerConfig cfg;
  cfg.frequency_hz = 499;
  cfg.pids = {static_cast<uint32_t>(child)};
  cfg.copy_user_stacks = true;
  cfg.stack_copy_bytes = 4096;
  cfg.snapshot.enabled = true;
  return cfg;
}

TEST(EbpfSnapshot, CopiesTheBytesAroundEachRegisterAndTheHintPages) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  ChildLayout l;
  pid_t child = StartChild(&l);
  ASSERT_GT(child, 0);
  EbpfSamplerConfig cfg = SnapshotConfig(child);
  cfg.snapshot.hint_pages = 2;
  auto sampler = EbpfStackSampler::Start(cfg);
  if (!sampler.ok()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    FAIL() << sampler.status().ToString();
  }
  ASSERT_TRUE((*sampler)->SetHintPages(static_cast<uint32_t>(child), {l.gone, l.hint}).ok());
  const uint64_t hints_set = MonotonicNs();
  Collected c = Sample(**sampler, 60, hints_set);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);

  ASSERT_GE(c.snapshots, 60) << c.samples << " samples";
  EXPECT_EQ(c.snapshots, c.samples) << "every sample of a snapshot target carries one";
  int checked = 0;
  for (const RawStackSample& s : c.kept) {
    const RawSnapshot& snap = *s.snapshot;
    if (snap.in_kernel) continue;  // an interrupt's registers are the same, but keep it simple
    ++checked;
    ASSERT_EQ(s.regs.size(), 17u);
    EXPECT_EQ(s.regs[3], l.a + kPage + 300);  // rbx
    EXPECT_EQ(s.regs[12], l.b + kPage - 50);  // r12
    EXPECT_EQ(snap.fs_base, l.fs_base);
    EXPECT_NE(snap.rflags & 0x2, 0u) << "rflags bit 1 is always set";
    EXPECT_EQ(snap.orig_rax, ~uint64_t{0}) << "not in a system call";
    EXPECT_EQ(snap.stack.size(), 4096u);
    EXPECT_EQ(snap.stack_base, s.regs[7] & ~(kPage - 1));
    // The pieces by source, each holding the pattern of its addresses.
    std::map<uint32_t, std::vector<RawSnapshot::Piece>> by_source;
    uint64_t bytes = 0;
    for (const RawSnapshot::Piece& p : snap.pieces) {
      by_source[p.source].push_back(p);
      ASSERT_LE(uint64_t{p.offset} + p.size, snap.bytes.size());
      EXPECT_EQ(p.address / kPage, (p.address + p.size - 1) / kPage) << "a piece in one page";
      bytes += p.size;
      if (p.source == 3 || p.source == 4 || p.source == 12 ||
          p.source == RawSnapshot::Piece::kHintPage) {
        for (uint32_t i = 0; i < p.size; ++i)
          ASSERT_EQ(snap.bytes[p.offset + i], PatternAt(p.address + i))
              << "source " << p.source << " byte " << i;
      }
    }
    EXPECT_EQ(bytes, snap.bytes.size());
    EXPECT_EQ(by_source.count(0), 0u) << "rax holds no address: nothing copied";
    ASSERT_EQ(by_source[3].size(), 1u);
    EXPECT_EQ(by_source[3][0].address, l.a + kPage + 300 - 256);
    EXPECT_EQ(by_source[3][0].size, 1024u);
    ASSERT_EQ(by_source[4].size(), 1u) << "rsi: what rbx's range left";
    EXPECT_EQ(by_source[4][0].address, l.a + kPage + 300 - 256 + 1024);
    EXPECT_EQ(by_source[4][0].size, 200u);
    ASSERT_EQ(by_source[12].size(), 2u) << "r12's range crosses a page: two pieces";
    EXPECT_EQ(by_source[12][0].address, l.b + kPage - 50 - 256);
    EXPECT_EQ(by_source[12][0].size, 306u);
    EXPECT_EQ(by_source[12][1].address, l.b + kPage);
    EXPECT_EQ(by_source[12][1].size, 718u);
    ASSERT_EQ(by_source[RawSnapshot::Piece::kHintPage].size(), 1u) << "the unmapped hint is not";
    EXPECT_EQ(by_source[RawSnapshot::Piece::kHintPage][0].address, l.hint);
    EXPECT_EQ(by_source[RawSnapshot::Piece::kHintPage][0].size, kPage);
    EXPECT_EQ(by_source.count(RawSnapshot::Piece::kFsBase), 1u) << "fs_base's TLS block";
    // What the sampler could not read is said, so that a window reaching it ends there: rax's
    // range (12345 is no address: two pieces, split at the page boundary) and the unmapped hint.
    ASSERT_EQ(snap.unreadable.size(), 3u);
    EXPECT_EQ(snap.unreadable[0].address, 12345u - 256);
    EXPECT_EQ(snap.unreadable[0].size, 0x3000u - (12345u - 256));
    EXPECT_EQ(snap.unreadable[1].address, 0x3000u);
    EXPECT_EQ(snap.unreadable[1].size, 12345u + 768 - 0x3000u);
    EXPECT_EQ(snap.unreadable[2].address, l.gone);
    EXPECT_EQ(snap.unreadable[2].size, kPage);
  }
  EXPECT_GE(checked, 10);
  EbpfSamplerStats st = (*sampler)->stats();
  // A sample whose stack could not be copied (the child being killed: its memory is gone)
  // carries no snapshot; every other one does.
  EXPECT_EQ(st.snapshots + st.stack_copies_failed, st.submitted);
  EXPECT_GE(st.snapshot_hints_unreadable, static_cast<uint64_t>(c.snapshots))
      << "the unmapped hint page is counted at each snapshot";
  EXPECT_EQ(st.snapshots_cut, 0u);
  EXPECT_EQ((*sampler)->CountersOf(static_cast<uint32_t>(child)).snapshot_hints_unreadable,
            st.snapshot_hints_unreadable);
}

TEST(EbpfSnapshot, CutsAtTheByteBoundAndCountsIt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  ChildLayout l;
  pid_t child = StartChild(&l);
  ASSERT_GT(child, 0);
  EbpfSamplerConfig cfg = SnapshotConfig(child);
  cfg.snapshot.max_bytes = 1500;  // rbx's 1 KiB fits; r12's second piece does not
  auto sampler = EbpfStackSampler::Start(cfg);
  if (!sampler.ok()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    FAIL() << sampler.status().ToString();
  }
  Collected c = Sample(**sampler, 30);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_GE(c.snapshots, 30);
  for (const RawStackSample& s : c.kept) EXPECT_LE(s.snapshot->bytes.size(), 1500u);
  EbpfSamplerStats st = (*sampler)->stats();
  EXPECT_EQ(st.snapshots_cut, st.snapshots) << "each snapshot of this child left r12's bytes out";
  EXPECT_EQ((*sampler)->CountersOf(static_cast<uint32_t>(child)).snapshots_cut, st.snapshots_cut);
}

// A snapshot subscription at 499 Hz beside a stack subscription at 49 Hz on the same process:
// the sampler walks frames only for about a tenth of the samples, and the stack subscription
// gets only those, at its own rate.
TEST(EbpfSnapshot, SamplesForSnapshotsAloneWalkNoFrames) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  ChildLayout l;
  pid_t child = StartChild(&l);
  ASSERT_GT(child, 0);
  std::mutex mu;
  uint64_t stacks = 0, stacks_without_frames = 0, snapshots = 0, snapshots_with_frames = 0;
  StackSubscriptionSettings ss;
  ss.pids = {static_cast<uint32_t>(child)};
  ss.frequency_hz = 49;
  ss.stack_copy_bytes = 4096;
  auto stack_sub = StackSubscription::Start(ss, [&](const RawStackSample& s) {
    std::lock_guard<std::mutex> lock(mu);
    ++stacks;
    stacks_without_frames += s.user.empty() || !s.frames_walked || s.snapshot != nullptr;
  });
  ASSERT_TRUE(stack_sub.ok()) << stack_sub.status().ToString();
  StackSubscriptionSettings snap = ss;
  snap.frequency_hz = 499;
  snap.snapshot.enabled = true;
  auto snap_sub = StackSubscription::Start(snap, [&](const RawStackSample& s) {
    std::lock_guard<std::mutex> lock(mu);
    ++snapshots;
    snapshots_with_frames += s.frames_walked;
  });
  ASSERT_TRUE(snap_sub.ok()) << snap_sub.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    usleep(100'000);
    std::lock_guard<std::mutex> lock(mu);
    if (snapshots >= 1000 || std::chrono::steady_clock::now() > deadline) break;
  }
  snap_sub->reset();
  stack_sub->reset();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_GE(snapshots, 1000u);
  EXPECT_EQ(stacks_without_frames, 0u) << "a stack subscriber got a sample without frames";
  // 49 of 499: about 98 of 1,000 walked frames (binomial: 60-140 is over 4 sigma).
  EXPECT_GT(snapshots_with_frames, 60u);
  EXPECT_LT(snapshots_with_frames, 140u);
  EXPECT_GT(stacks, snapshots_with_frames / 2) << stacks << " stack samples";
  EXPECT_LE(stacks, snapshots_with_frames);
}

// Each record carries the process's thread count (whether an atomic may race another thread)
// and its mapping sequence (mm_lock_seq): the same in every sample
// of a process that maps nothing meanwhile, moving in one that makes a page read-only and
// writable again every round (what user space needs to know whether its older view of the
// mappings holds at a sample: collectors/src/process_image.h).
TEST(EbpfSnapshot, RecordsCarryTheThreadsAndTheMappingSequenceThatMovesWithMprotect) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  auto sequences = [](pid_t child, std::set<uint32_t>* seen, int* without) {
    auto sampler = EbpfStackSampler::Start(SnapshotConfig(child));
    if (!sampler.ok()) return sampler.status().ToString();
    Collected c = Sample(**sampler, 40);
    for (const RawStackSample& s : c.kept) {
      EXPECT_EQ(s.snapshot->threads, 1u) << "a child of one thread";
      if (!s.snapshot->has_mapping_sequence) {
        ++*without;
        continue;
      }
      if (!s.snapshot->mappings_changing) seen->insert(s.snapshot->mapping_sequence);
    }
    return c.kept.size() >= 40 ? std::string() : "only " + std::to_string(c.kept.size());
  };
  ChildLayout l;
  const pid_t still = StartChild(&l);
  ASSERT_GT(still, 0);
  std::set<uint32_t> still_seen;
  int without = 0;
  const std::string still_error = sequences(still, &still_seen, &without);
  kill(still, SIGKILL);
  waitpid(still, nullptr, 0);
  ASSERT_EQ(still_error, "");
  if (without > 0) {
    // Kernels from 6.4 on have the sequence (with per-VMA locks, which x86-64 enables).
    utsname u{};
    int major = 0, minor = 0;
    ASSERT_EQ(uname(&u), 0);
    ASSERT_EQ(std::sscanf(u.release, "%d.%d", &major, &minor), 2) << u.release;
    ASSERT_LT(major * 100 + minor, 604) << u.release << ": records without the mapping sequence";
    GTEST_SKIP() << "kernel " << u.release << " has no mm_lock_seq (it came in 6.4)";
  }
  EXPECT_EQ(still_seen.size(), 1u) << "a process that maps nothing keeps its sequence";

  const pid_t toggling = fork();
  ASSERT_GE(toggling, 0);
  if (toggling == 0) {
    void* page = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) _exit(2);
    for (uint64_t round = 0;; ++round) {
      mprotect(page, kPage, round % 2 ? PROT_READ : PROT_READ | PROT_WRITE);
      for (int i = 0; i < 200000; ++i) asm volatile("");
    }
  }
  std::set<uint32_t> toggling_seen;
  const std::string toggling_error = sequences(toggling, &toggling_seen, &without);
  kill(toggling, SIGKILL);
  waitpid(toggling, nullptr, 0);
  ASSERT_EQ(toggling_error, "");
  EXPECT_GE(toggling_seen.size(), 10u) << "40 samples of a process that mprotects every round";
  for (uint32_t seq : toggling_seen) EXPECT_EQ(seq % 2, 0u) << "odd: a change under way";
}

TEST(EbpfSnapshot, RejectsBoundsOverTheRecordsRoom) {
  SnapshotSettings s;
  s.enabled = true;
  s.register_below = 4000;
  s.register_above = 200;
  EXPECT_FALSE(CheckSnapshotSettings(s).ok());
  s = SnapshotSettings{};
  s.enabled = true;
  s.hint_pages = kMaxHintPages + 1;
  EXPECT_FALSE(CheckSnapshotSettings(s).ok());
  s = SnapshotSettings{};
  s.enabled = true;
  s.max_bytes = kMaxSnapshotBytes + 1;
  EXPECT_FALSE(CheckSnapshotSettings(s).ok());
  EbpfSamplerConfig cfg;
  cfg.snapshot.enabled = true;
  cfg.copy_user_stacks = true;
  cfg.snapshot.hint_pages = 65;
  auto sampler = EbpfStackSampler::Start(cfg);
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().message().find("hint pages"), std::string::npos);
}

}  // namespace
}  // namespace pathprof::collectors
