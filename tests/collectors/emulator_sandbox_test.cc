// Snapshot windows are emulated in a helper (pathprof-emulator) that runs unprivileged and
// sandboxed: checked on the real helper's /proc status while it emulates a real child's real
// eBPF samples, in an admin's collector (root: the helper becomes nobody) and in a confined one
// (the helper is the requester); and against the attack: a helper made to write outside its
// buffers or to exec (what an exploit of the emulator would do next) dies, alone; the collector
// counts the samples lost with it, starts another, and its windows go on.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/capable_user.h"
#include "common/helper_end.h"
#include "emulator_client.h"
#include "emulator_wire.h"
#include "pathprof/collectors/snapshot_windows.h"
#include "pathprof/core/procfs.h"
#include "pathprof/stepping/helper_process.h"

namespace pathprof::collectors {
namespace {

constexpr uint32_t kNobody = 65534;

std::string Bin(const std::string& name) {
  return std::string(PATHPROF_BIN_DIR) + "/" + name;
}

// The hot loop, as uid and gid `id` (no groups) when given.
pid_t SpawnLoop(std::optional<uint32_t> id = std::nullopt) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (id && (setgroups(0, nullptr) != 0 || setresgid(*id, *id, *id) != 0 ||
               setresuid(*id, *id, *id) != 0))
      _exit(126);
    const std::string path = Bin("example_hotloop_static");
    execl(path.c_str(), path.c_str(), "2000000000", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

std::string Field(pid_t pid, const char* key) {
  auto status = procfs::Procfs::Host().Read(pid, "status");
  if (!status.ok()) return "";
  const auto v = procfs::StatusField(*status, key);
  return v ? std::string(*v) : "";
}

struct Windows {
  std::mutex mu;
  size_t count = 0;
  SnapshotWindowCollector::WindowSink Sink() {
    return [this](const BranchBatch&) {
      std::lock_guard<std::mutex> lock(mu);
      ++count;
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return count;
  }
};

bool WaitFor(const std::function<bool()>& done, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

SnapshotWindowOptions Options(pid_t target) {
  SnapshotWindowOptions o;
  o.pids = {static_cast<uint32_t>(target)};
  o.frequency_hz = 499;
  return o;
}

struct Confinement {
  std::string uid, gid, groups, cap_eff, cap_prm, no_new_privs, seccomp;
};

// Windows taken through the helper, and the helper's confinement while it takes them.
Confinement WhileTakingWindows(const SnapshotWindowOptions& o) {
  Windows got;
  auto c = SnapshotWindowCollector::Start(o, got.Sink());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  EXPECT_TRUE(WaitFor([&] { return got.size() >= 20; }, 20000)) << got.size() << " windows";
  const pid_t helper = (*c)->emulator_pid();
  EXPECT_GT(helper, 0);
  EXPECT_NE(helper, getpid());
  Confinement now{Field(helper, "Uid"),    Field(helper, "Gid"),    Field(helper, "Groups"),
                  Field(helper, "CapEff"), Field(helper, "CapPrm"), Field(helper, "NoNewPrivs"),
                  Field(helper, "Seccomp")};
  const SnapshotWindowStats st = (*c)->stats();
  EXPECT_EQ(st.emulator_failures, 0u) << st.emulator_failure;
  return now;
}

TEST(EmulatorSandbox, AnAdminsHelperIsNobodyWithoutCapabilitiesUnderASeccompFilter) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  const pid_t target = SpawnLoop();
  ASSERT_GT(target, 0);
  const Confinement c = WhileTakingWindows(Options(target));
  const std::string nobody = std::to_string(kNobody);
  EXPECT_EQ(c.uid, nobody + "\t" + nobody + "\t" + nobody + "\t" + nobody);
  EXPECT_EQ(c.gid, nobody + "\t" + nobody + "\t" + nobody + "\t" + nobody);
  EXPECT_EQ(c.groups, "");
  EXPECT_EQ(c.cap_eff, "0000000000000000");
  EXPECT_EQ(c.cap_prm, "0000000000000000");
  EXPECT_EQ(c.no_new_privs, "1");
  EXPECT_EQ(c.seccomp, "2");  // SECCOMP_MODE_FILTER
  KillAndReap(target);
}

// The packaged daemon is not root but `pathprof` with ambient capabilities, which an exec passes
// on: its helper must drop them all the same (before, being no root, it started the helper
// without an identity to drop to, and the helper kept CAP_DAC_READ_SEARCH and the rest).
TEST(EmulatorSandbox, AHelperOfANonRootCollectorWithCapabilitiesHasNone) {
  if (geteuid() != 0) GTEST_SKIP() << "making a non-root process with capabilities needs root";
  const std::string got = testing::InChildAsCapableUser(
      4243, {CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_SETUID, CAP_SETGID}, [] {
        auto c = EmulatorClient::Start({});
        if (!c.ok()) return "start: " + c.status().ToString();
        const pid_t helper = (*c)->pid();
        const std::string uid = Field(helper, "Uid");
        std::string out = uid.substr(0, uid.find('\t')) + " CapEff " + Field(helper, "CapEff") +
                          " CapAmb " + Field(helper, "CapAmb") + " Seccomp " +
                          Field(helper, "Seccomp");
        c->reset();  // its socket closes; it exits
        return out;
      });
  EXPECT_EQ(got,
            std::to_string(kNobody) + " CapEff 0000000000000000 CapAmb 0000000000000000 Seccomp 2");
}

TEST(EmulatorSandbox, AConfinedSessionsHelperIsItsRequester) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  constexpr uint32_t kUser = 4242;  // a user with no name, as a requester may be
  const pid_t target = SpawnLoop(kUser);
  ASSERT_GT(target, 0);
  SnapshotWindowOptions o = Options(target);
  o.only_uid = kUser;
  o.open_as = decoders::FileCredentials{kUser, kUser};
  const Confinement c = WhileTakingWindows(o);
  EXPECT_EQ(c.uid.substr(0, c.uid.find('\t')), std::to_string(kUser));
  EXPECT_EQ(c.cap_eff, "0000000000000000");
  EXPECT_EQ(c.no_new_privs, "1");
  EXPECT_EQ(c.seccomp, "2");
  KillAndReap(target);
}

// The sandbox changes where windows are emulated, not what they are: two collectors on the same
// target get the same records from the one sampler (same rate); one emulates in the helper,
// the other in its own thread. Windows of the same sample never differ where both have events;
// they may differ in length only where the two read the process's maps at different times
// (protection_unknown ends), so almost all are identical.
TEST(EmulatorSandbox, TheHelpersWindowsAreThoseEmulatedInProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  const pid_t target = SpawnLoop();
  ASSERT_GT(target, 0);
  SnapshotWindowOptions o = Options(target);
  o.snapshot.hint_pages = 0;  // hint pages are per process: the two would set each other's
  std::mutex mu;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<BranchEvent>> sandboxed, in_process;
  auto keep = [&mu](auto* into) {
    return [&mu, into](const BranchBatch& b) {
      std::lock_guard<std::mutex> lock(mu);
      (*into)[{b.tid, b.time_ns}] = b.events;
    };
  };
  auto helper = SnapshotWindowCollector::Start(o, keep(&sandboxed));
  ASSERT_TRUE(helper.ok()) << helper.status().ToString();
  o.emulate_in_this_process = true;
  auto local = SnapshotWindowCollector::Start(o, keep(&in_process));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_TRUE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return sandboxed.size() >= 300 && in_process.size() >= 300;
      },
      20000));
  (*helper)->Stop();
  (*local)->Stop();
  KillAndReap(target);
  size_t both = 0, identical = 0, differ = 0, helper_shorter = 0;
  for (const auto& [key, events] : sandboxed) {
    auto it = in_process.find(key);
    if (it == in_process.end()) continue;
    ++both;
    const size_t common = std::min(events.size(), it->second.size());
    if (!std::equal(events.begin(), events.begin() + common, it->second.begin())) ++differ;
    identical += events == it->second;
    helper_shorter += events.size() < it->second.size();
  }
  std::printf("%zu windows of the same samples: %zu identical, %zu shorter in the helper\n", both,
              identical, helper_shorter);
  EXPECT_GE(both, 250u);
  EXPECT_EQ(differ, 0u) << "windows of the same sample that disagree";
  // Where the lengths differ, the in-process collector (which hands each sample on at once)
  // emulated before any sample taken after its read of the maps had arrived; the helper's
  // batches carry such samples, so its windows are never the shorter (302-304 of 304-321
  // identical in three runs).
  EXPECT_EQ(helper_shorter, 0u);
  EXPECT_GE(identical * 100, both * 90) << identical << " identical of " << both;
}

#ifndef NDEBUG
// The helper started with PATHPROF_EMULATOR_FAULT set does `fault` at its first sample; the
// ones started after it (the variable gone) work. `starts`: how many the collector may start.
struct AfterFault {
  SnapshotWindowStats stats;
  size_t windows = 0;
};
AfterFault RunWithFault(const char* fault, uint32_t starts, size_t want_windows) {
  const pid_t target = SpawnLoop();
  EXPECT_GT(target, 0);
  SnapshotWindowOptions o = Options(target);
  o.max_emulator_starts = starts;
  Windows got;
  setenv("PATHPROF_EMULATOR_FAULT", fault, 1);
  auto c = SnapshotWindowCollector::Start(o, got.Sink());
  unsetenv("PATHPROF_EMULATOR_FAULT");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  AfterFault out;
  if (!c.ok()) return out;
  EXPECT_TRUE(WaitFor(
      [&] {
        const SnapshotWindowStats st = (*c)->stats();
        return st.emulator_failures >= 1 && (want_windows == 0 || got.size() >= want_windows);
      },
      20000));
  KillAndReap(target);  // no sample after this one: the counts below are final
  (*c)->Flush();
  out.stats = (*c)->stats();
  out.windows = got.size();
  return out;
}

TEST(EmulatorSandbox, AHelperThatWritesOutsideItsBuffersDiesAloneAndTheWindowsGoOn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  const AfterFault r = RunWithFault("write", 2, 20);
  EXPECT_EQ(r.stats.emulator_failures, 1u);
  // SIGSEGV, or with a sanitizer runtime its report and exit.
  EXPECT_NE(r.stats.emulator_failure.find("the helper"), std::string::npos)
      << r.stats.emulator_failure;
  EXPECT_EQ(r.stats.emulator_failure.find("exited with status 0"), std::string::npos)
      << r.stats.emulator_failure;
  EXPECT_GE(r.stats.lost_emulator_gone, 1u);  // the sample it died on, counted
  EXPECT_GE(r.windows, 20u) << "the second helper's windows";
  EXPECT_FALSE(r.stats.emulator_exhausted);
}

TEST(EmulatorSandbox, AHelperThatExecsIsKilledByItsFilterAndNoneIsLeft) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF)";
  // One start allowed: the first helper's death leaves none.
  const AfterFault r = RunWithFault("exec", 1, 0);
  EXPECT_EQ(r.stats.emulator_failures, 1u);
  EXPECT_NE(r.stats.emulator_failure.find("signal 31"), std::string::npos)  // SIGSYS
      << r.stats.emulator_failure;
  EXPECT_EQ(r.windows, 0u);
  EXPECT_TRUE(r.stats.emulator_exhausted);
  // Every sample is still accounted for: lost with the helper, or never handed to one.
  const SnapshotWindowStats& st = r.stats;
  EXPECT_EQ(st.samples, st.windows + st.no_snapshot + st.in_mapping_syscall +
                            st.dropped_queue_full + st.budget_count + st.budget_cpu +
                            st.own_process + st.lost_emulator_gone + st.after_stop + st.queued)
      << "samples " << st.samples << " lost " << st.lost_emulator_gone;
}

// A batch that hangs ends the helper by itself at its deadline (SIGALRM), whoever could or
// could not kill it: the packaged daemon (no root, no CAP_KILL) cannot signal a helper that
// became nobody. Nothing here kills it.
TEST(EmulatorSandbox, AHungBatchEndsTheHelperAtItsOwnDeadline) {
  auto path = EmulatorHelperPath();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  int sock = -1;
  auto pid = testing::SpawnHangingHelper(*path, "PATHPROF_EMULATOR_FAULT",
                                         {"--sample-deadline-s", "1"}, &sock);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  const emulator_wire::Settings settings = emulator_wire::SettingsFor(EmulationSettings{});
  ASSERT_TRUE(
      emulator_wire::Send(sock, emulator_wire::Type::kSettings, &settings, sizeof settings));
  emulator_wire::Header h{};
  std::vector<uint8_t> payload;
  int fd = -1;
  ASSERT_EQ(emulator_wire::Receive(sock, 10'000, &h, &payload, &fd),
            emulator_wire::ReceiveResult::kMessage);
  EXPECT_EQ(h.type, emulator_wire::Type::kReady);
  // An empty batch: the hook hangs at any batch's start, before its first sample.
  std::vector<uint8_t> batch;
  emulator_wire::EncodeSamples({}, &batch);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(emulator_wire::Send(sock, emulator_wire::Type::kSamples, batch));
  const testing::HelperEnd end = testing::WaitForHelperEnd(*pid, start);
  close(sock);
  ASSERT_TRUE(end.reaped);
  EXPECT_EQ(end.signal, SIGALRM) << end.description;
  EXPECT_GE(end.seconds, 0.9);
  EXPECT_LT(end.seconds, 5.0);
}
#endif

}  // namespace
}  // namespace pathprof::collectors
