// The hybrid branch source on real processes, real eBPF and the real tracer: a process whose
// snapshot windows hold its paths keeps them and is never stopped (no tracer ever attaches); one
// whose snapshot windows end early (Debian's zstd: its loops branch on memory no snapshot holds)
// gets stop-and-emulate windows after its probe, and the stats say which windows came from where
// and why. Under `make check-figures`, the hybrid's hot paths of zstd and python3 against their
// exact traces.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/figures.h"
#include "common/path_accuracy.h"
#include "common/spawn.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/procfs.h"
#include "pathprof/pipeline/session.h"
#include "target_stats.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::testing::StatsOf;

uint64_t CountOf(const std::map<std::string, uint64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

pid_t TracerOf(pid_t pid) {
  auto status = pathprof::procfs::Procfs::Host().ReadStatus(pid);
  return status.ok() ? status->tracer_pid : -1;
}

void EndChild(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// A hybrid session on `pid` alone; windows at the snapshot source's default rate.
std::unique_ptr<pl::Session> StartHybrid(pid_t pid, const std::string& id) {
  pl::SessionConfig c;
  c.pids = {static_cast<uint32_t>(pid)};
  c.source = pl::SourceChoice::kHybrid;
  c.follow_children = false;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  auto session = pl::Session::Start(id, c, pathprof::collectors::ProbeHostCapabilities(), nullptr);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session.value()) : nullptr;
}

// What a poll every 100 ms saw of `pid` until `enough` held of its stats or `seconds` passed:
// its last stats and how many polls found a tracer attached to it.
struct Watched {
  pl::TargetStats stats;
  int traced_polls = 0;
};
template <typename Enough>
Watched Watch(const pl::Session& session, pid_t pid, int seconds, Enough enough) {
  Watched w;
  for (int i = 0; i < seconds * 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    w.traced_polls += TracerOf(pid) > 0;
    auto all = session.Stats();
    if (const pl::TargetStats* s = StatsOf(all, pid)) w.stats = *s;
    if (enough(w)) break;
  }
  return w;
}

// Debian's zstd compressing one text (32 KiB unless `text_bytes` says) over and over (a list of
// 200,000 names of it), in a directory of its own; the process is ended and the directory
// removed with this.
class ZstdLoop {
 public:
  explicit ZstdLoop(int level = 3, int text_bytes = 32 * 1024) : level_(level) {
    char dir[] = "/tmp/pathprof-hybrid-zstd-XXXXXX";
    if (mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    pathprof::testing::WriteZstdText(dir_, 200000, text_bytes);
  }
  ~ZstdLoop() {
    End();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  const std::string& dir() const { return dir_; }
  // Starts it; returns its pid once past the shell's exec (-1 when it could not start).
  pid_t Start() {
    if (dir_.empty()) return -1;
    pid_ = pathprof::testing::SpawnArgv(pathprof::testing::ZstdLongRun(dir_, level_));
    if (pid_ > 0) usleep(300'000);
    return pid_;
  }
  void End() {
    if (pid_ > 0) EndChild(pid_);
    pid_ = -1;
  }

 private:
  int level_;
  std::string dir_;
  pid_t pid_ = -1;
};

bool HybridRunsHere(std::string* why) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  if (geteuid() != 0) {
    *why = "needs root (eBPF snapshots, ptrace)";
    return false;
  }
  if (!caps.ebpf.available) {
    *why = "eBPF stacks unavailable: " + caps.ebpf.detail;
    return false;
  }
  if (!caps.snapshot.available) {
    *why = "snapshot windows unavailable: " + caps.snapshot.detail;
    return false;
  }
  return true;
}

TEST(HybridSource, AProcessWhoseSnapshotsHoldItsPathsIsNeverStopped) {
  std::string why;
  if (!HybridRunsHere(&why)) GTEST_SKIP() << why;
  const std::string bin = std::string(PATHPROF_BIN_DIR) + "/example_hotloop_static";
  const pid_t loop = pathprof::testing::SpawnArgv({bin, "4000000000"});
  ASSERT_GT(loop, 0);
  auto session = StartHybrid(loop, "hybrid-hotloop");
  ASSERT_NE(session, nullptr);
  // The probe ends after 64 windows; 168 more show the verdict held. A tracer seen attached at
  // any poll is a stop the hybrid must not have made.
  const auto [stats, traced_polls] = Watch(*session, loop, 15, [](const Watched& w) {
    return CountOf(w.stats.windows_by_source, "snapshot") >= 232;
  });
  session->Stop();
  EndChild(loop);
  EXPECT_EQ(traced_polls, 0) << "a tracer attached to a process whose snapshots suffice";
  EXPECT_GE(CountOf(stats.windows_by_source, "snapshot"), 232u);
  EXPECT_EQ(CountOf(stats.windows_by_source, "stopped"), 0u);
  EXPECT_EQ(CountOf(stats.windows_held_back, "hybrid_probe_replaced"), 0u);
  // The verdict and the measured length that decided it, for the reader of the stats.
  EXPECT_NE(stats.window_weighting.find(
                "snapshot windows: the newest 32 of its first 64 snapshot windows held"),
            std::string::npos)
      << stats.window_weighting;
}

// Debian's zstd running under a hybrid session of its own (skipped where either cannot run).
class HybridOnZstd : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!HybridRunsHere(&why)) GTEST_SKIP() << why;
    if (access("/usr/bin/zstd", X_OK) != 0)
      GTEST_SKIP() << "needs /usr/bin/zstd (Debian: zstd; scripts/install-deps.sh installs it)";
    zstd = loop.Start();
    ASSERT_GT(zstd, 0);
    session = StartHybrid(zstd, "hybrid-zstd");
    ASSERT_NE(session, nullptr);
  }

  ZstdLoop loop;
  pid_t zstd = -1;
  std::unique_ptr<pl::Session> session;  // stopped before the loop ends (members' order)
};

TEST_F(HybridOnZstd, AProcessWhoseSnapshotsEndEarlyGetsStopAndEmulateWindows) {
  const auto [stats, traced_polls] = Watch(*session, zstd, 30, [](const Watched& w) {
    return CountOf(w.stats.windows_by_source, "stopped") >= 40 && w.traced_polls > 0;
  });
  session->Stop();
  const pid_t tracer_after = TracerOf(zstd);
  loop.End();
  std::printf("zstd: windows by source: snapshot %llu, stopped %llu; %s\n",
              static_cast<unsigned long long>(CountOf(stats.windows_by_source, "snapshot")),
              static_cast<unsigned long long>(CountOf(stats.windows_by_source, "stopped")),
              stats.window_weighting.c_str());
  EXPECT_GE(CountOf(stats.windows_by_source, "stopped"), 40u);
  EXPECT_GT(traced_polls, 0) << "stop-and-emulate windows with no tracer ever seen";
  EXPECT_EQ(tracer_after, 0) << "the session's end detaches its tracer";
  // The probe's windows are replaced by the stopped ones, not added to them: held back, counted.
  EXPECT_EQ(CountOf(stats.windows_held_back, "hybrid_probe_replaced"), 64u);
  EXPECT_EQ(CountOf(stats.windows_by_source, "snapshot"), 0u);
  EXPECT_NE(stats.window_weighting.find(
                "stop-and-emulate windows: the newest 32 of its first 64 snapshot"),
            std::string::npos)
      << stats.window_weighting;
}

// The tracer killed while zstd runs (as an exploit of the interpreter would end it): zstd goes
// on untraced and not stopped, the session says the tracer ended and counts it, and keeps the
// stopped windows it had.
TEST_F(HybridOnZstd, ATracerThatDiesWhileItsProcessLivesIsSaidAndCounted) {
  pid_t tracer = 0;
  Watch(*session, zstd, 30, [&](const Watched& w) {
    if (w.traced_polls > 0 && tracer == 0) tracer = TracerOf(zstd);
    return tracer > 0 && CountOf(w.stats.windows_by_source, "stopped") >= 10;
  });
  ASSERT_GT(tracer, 0) << "no tracer attached in 30 s";
  ASSERT_EQ(kill(tracer, SIGKILL), 0);  // the session's own tracer, by pid
  const auto [stats, traced_polls] = Watch(*session, zstd, 10, [](const Watched& w) {
    return CountOf(w.stats.drops, "hybrid_tracer_ended") > 0;
  });
  const pid_t tracer_now = TracerOf(zstd);
  auto status = pathprof::procfs::Procfs::Host().ReadStatus(zstd);
  session->Stop();
  loop.End();
  EXPECT_EQ(CountOf(stats.drops, "hybrid_tracer_ended"), 1u);
  EXPECT_NE(
      stats.window_weighting.find("its tracer ended: the tracer process was killed by signal 9"),
      std::string::npos)
      << stats.window_weighting;
  EXPECT_GE(CountOf(stats.windows_by_source, "stopped"), 10u);
  EXPECT_EQ(tracer_now, 0) << "zstd is still traced";
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(status->state == 'R' || status->state == 'S')
      << "zstd left in state " << status->state;
}

// A hybrid session on `pid` for 20 s: its paths of `pid` as shares, against `exact` (the
// steady-state round), with the top five of each and the windows by source printed; returns the
// top-5 path weight overlap.
double HybridTopOverlap(const pathprof::testing::PathShares& exact, pid_t pid,
                        const char* program) {
  auto session = StartHybrid(pid, std::string("hybrid-accuracy-") + program);
  if (session == nullptr) return 0;
  std::this_thread::sleep_for(std::chrono::seconds(20));
  session->Stop();
  pl::HotPathsQuery q;
  q.top_k = 1000;
  q.with_blocks = false;
  const pl::HotPathsResult paths = session->HotPaths(q);
  auto all = session->Stats();
  std::vector<std::pair<pathprof::hwmodel::PathDescriptor, double>> weights;
  for (const pl::HotPath& p : paths.paths)
    if (p.pid == static_cast<uint32_t>(pid))
      weights.emplace_back(
          pathprof::hwmodel::PathDescriptor{p.start.address, static_cast<uint8_t>(p.length),
                                            p.outcomes},
          p.estimate.value);
  const auto shares = pathprof::testing::NormalizeShares(weights);
  const pl::TargetStats* s = StatsOf(all, pid);
  EXPECT_NE(s, nullptr) << program << " has no stats";
  if (s == nullptr) return 0;
  pathprof::testing::PrintTop5(exact, shares);
  const double top = pathprof::testing::TopOverlap(exact, shares);
  std::printf(
      "%s hybrid: top-5 path weight overlap %.1f%%, all paths %.1f%%; windows by source: "
      "snapshot %llu, stopped %llu\n",
      program, 100 * top, 100 * pathprof::testing::Overlap(exact, shares),
      static_cast<unsigned long long>(CountOf(s->windows_by_source, "snapshot")),
      static_cast<unsigned long long>(CountOf(s->windows_by_source, "stopped")));
  return top;
}

// The bar: the hybrid's top five paths of zstd against the exact trace's, ≥ 98%, at
// -3 and at -19 (the issue names -19: its optimal parser's match finder runs longer loops). -19
// compresses a 2 KiB text: on the 32 KiB one a round takes ~40 times -3's (21 ms against ~1 ms
// natively on a 2-vCPU Xeon VM), and the exact trace of three rounds single-steps every one of
// those instructions (hours there); 2 KiB keeps -19's round within ~3 times -3's.
class HybridZstdAccuracy : public ::testing::TestWithParam<int> {};

int ZstdTextBytes(int level) {
  return level >= 19 ? 2 * 1024 : 32 * 1024;
}

TEST_P(HybridZstdAccuracy, HotPathsMatchTheExactTrace) {
  PATHPROF_FIGURES_ONLY();
  std::string why;
  if (!HybridRunsHere(&why)) GTEST_SKIP() << why;
  if (access("/usr/bin/zstd", X_OK) != 0 || access("/usr/bin/setarch", X_OK) != 0)
    GTEST_SKIP() << "needs /usr/bin/zstd and /usr/bin/setarch (Debian: zstd, util-linux; "
                    "scripts/install-deps.sh installs both)";
  const int level = GetParam();
  ZstdLoop loop(level, ZstdTextBytes(level));
  ASSERT_FALSE(loop.dir().empty());
  auto exact =
      pathprof::testing::ExactRoundShares(pathprof::testing::ZstdRounds(loop.dir(), 2, level),
                                          pathprof::testing::ZstdRounds(loop.dir(), 1, level));
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  const pid_t zstd = loop.Start();
  ASSERT_GT(zstd, 0);
  const std::string program = "zstd -" + std::to_string(level);
  EXPECT_GE(HybridTopOverlap(*exact, zstd, program.c_str()), 0.98);
}

INSTANTIATE_TEST_SUITE_P(Levels, HybridZstdAccuracy, ::testing::Values(3, 19),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "level" + std::to_string(info.param);
                         });

// The same bar on Debian's python3: an interpreter's paths (its dispatch loop, dict probes)
// against the exact trace's round of the same loop.
TEST(HybridSource, Python3HotPathsMatchTheExactTrace) {
  PATHPROF_FIGURES_ONLY();
  std::string why;
  if (!HybridRunsHere(&why)) GTEST_SKIP() << why;
  if (access("/usr/bin/python3", X_OK) != 0 || access("/usr/bin/setarch", X_OK) != 0)
    GTEST_SKIP() << "needs /usr/bin/python3 and /usr/bin/setarch (Debian: python3, util-linux; "
                    "scripts/install-deps.sh installs both)";
  auto exact = pathprof::testing::ExactRoundShares(pathprof::testing::PythonRounds(2),
                                                   pathprof::testing::PythonRounds(1));
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  const pid_t python = pathprof::testing::SpawnArgv(pathprof::testing::PythonRounds(0));
  ASSERT_GT(python, 0);
  usleep(300'000);  // past env's and setarch's execs
  EXPECT_GE(HybridTopOverlap(*exact, python, "python3"), 0.98);
  EndChild(python);
}

}  // namespace
