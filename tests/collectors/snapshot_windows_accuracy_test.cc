// Hot paths from snapshot windows (no stop) against the exact trace of the same deterministic
// program (tests/common/path_accuracy.h). Snapshot windows are ragged: each ends where its
// snapshot runs out, so the same windows go through the window estimator with each window's own
// length (W - k + 1) and with counted prefixes (docs/profiles.md "Ragged windows"), and the
// top-5 path weight overlap of each is printed; the test holds the default (the pipeline's) to
// its bar.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>

#include "common/figures.h"
#include "common/path_accuracy.h"
#include "common/spawn.h"
#include "pathprof/collectors/snapshot_windows.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/hwmodel/window_estimator.h"
#include "pathprof/stepping/instruction_reader.h"

namespace pathprof::collectors {
namespace {

using testing::PathShares;

// The example programs are built beside the tests.
std::string ExampleBinary(const std::string& name) {
  return std::string(PATHPROF_BIN_DIR) + "/" + name;
}

// One recorded window and its blocks' durations (cycle model).
struct TimedWindow {
  std::vector<BranchEvent> events;
  std::vector<double> durations;
};

struct SnapshotRun {
  std::vector<TimedWindow> windows;
  SnapshotWindowStats stats;
};

// `seconds` of snapshot windows of `argv` (or fewer, once `enough` windows came) at the source's
// defaults (999 Hz, W = 32, no learned hints), each timed by the cycle model over the code:
// `exe` at its link addresses (static, not PIE), or the live process's bytes.
SnapshotRun Record(const std::vector<std::string>& argv, const std::string& exe, int seconds,
                   size_t enough = SIZE_MAX) {
  SnapshotRun run;
  const pid_t target = testing::SpawnArgv(argv);
  if (target <= 0) return run;
  usleep(300'000);  // past a wrapper's exec and the program's start-up
  auto model = decoders::CycleModel::Create();
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  std::optional<Result<std::shared_ptr<const decoders::ElfImage>>> image;
  if (!exe.empty()) image = decoders::ElfImage::Open(exe);
  stepping::InstructionReader live(target);
  std::mutex mu;
  SnapshotWindowOptions options;
  options.pids = {static_cast<uint32_t>(target)};
  auto collector = SnapshotWindowCollector::Start(options, [&](const BranchBatch& b) {
    if (!model.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    TimedWindow w;
    w.events = b.events;
    w.durations = (*model)->WindowDurations(b.events, [&](uint64_t address) {
      return image && image->ok() ? (**image)->CodeAt(address) : live.Bytes(address);
    });
    run.windows.push_back(std::move(w));
  });
  EXPECT_TRUE(collector.ok()) << collector.status().ToString();
  if (collector.ok()) {
    for (int i = 0; i < seconds * 10; ++i) {
      usleep(100'000);
      std::lock_guard<std::mutex> lock(mu);
      if (run.windows.size() >= enough) break;
    }
    (*collector)->Flush();
    run.stats = (*collector)->stats();
    collector->reset();
  }
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  return run;
}

// The windows through the estimator the pipeline uses for them (time-uniform starts), with
// `prefix` (0: each window's own length).
PathShares Estimate(const SnapshotRun& run, uint32_t prefix) {
  hwmodel::WindowEstimatorConfig config;
  config.starts = hwmodel::WindowStarts::kTime;
  config.counted_prefix = prefix;
  config.window_cap = 32;
  auto est = hwmodel::WindowEstimator::Create(config);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  if (!est.ok()) return {};
  for (const TimedWindow& w : run.windows) est->AddWindow(w.events, w.durations);
  return testing::SharesOf(*est);
}

// Prints the windows' lengths and each weighting's overlaps; returns the top-5 overlap of the
// pipeline's weighting (hwmodel::kRaggedCountedPrefix).
double Report(const char* name, const PathShares& exact, const SnapshotRun& run) {
  const uint32_t pipeline_prefix = hwmodel::kRaggedCountedPrefix;
  std::vector<uint64_t> lengths;
  for (const TimedWindow& w : run.windows)
    lengths.push_back(static_cast<uint64_t>(std::count_if(
        w.events.begin(), w.events.end(), [](const BranchEvent& e) { return e.taken; })));
  std::sort(lengths.begin(), lengths.end());
  const uint64_t median = lengths.empty() ? 0 : lengths[lengths.size() / 2];
  std::printf("%s: %zu windows (%llu samples), median %llu taken branches\n", name,
              run.windows.size(), (unsigned long long)run.stats.samples,
              (unsigned long long)median);
  double pipeline = 0;
  for (uint32_t prefix : {0u, 1u, 2u, 4u, 8u}) {
    const PathShares shares = Estimate(run, prefix);
    const double top = testing::TopOverlap(exact, shares);
    std::printf("  counted prefix %2u%s: top-5 overlap %5.1f%%, all paths %5.1f%%\n", prefix,
                prefix == 0 ? " (own length)" : "", 100 * top,
                100 * testing::Overlap(exact, shares));
    if (prefix == pipeline_prefix) {
      pipeline = top;
      testing::PrintTop5(exact, shares, "snap");
    }
  }
  return pipeline;
}

TEST(SnapshotWindowsAccuracy, HotLoopHotPathsMatchTheExactTrace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace for the exact trace)";
  const std::string exe = ExampleBinary("example_hotloop_static");
  auto exact = testing::ExactRoundShares({exe, "2"}, {exe, "1"});
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  // The 10 s under `make check-figures`; in the suite 1,000 windows (about a second),
  // whose sampling noise (a point or two on the top paths) is far inside the guard below.
  const SnapshotRun run =
      testing::FullFigures() ? Record({exe, "0"}, exe, 10) : Record({exe, "0"}, exe, 10, 1000);
  ASSERT_GT(run.windows.size(), 100u);
  const double top = Report("hot loop", *exact, run);
  // The bar is 98% after 10 s: 97.0-99.2% in release runs here (AMD EPYC, KVM guest,
  // 2 vCPUs), as emulated windows with a stop each get 97.2-97.3%; what is left is the cycle
  // model's weighting of hot() against warm() (docs/profiles.md). The assertion guards against
  // regressions (a wrong weight or a wrong window costs far more); the bar is printed.
  std::printf("bar 98%%: %s\n", top >= 0.98 ? "met" : "not met");
  EXPECT_GE(top, 0.90);
}

// Debian's zstd compressing one 32 KiB text (two exact traces: a measurement).
TEST(SnapshotWindowsAccuracy, ZstdHotPathsMatchTheExactTrace) {
  PATHPROF_FIGURES_ONLY();
  if (geteuid() != 0) GTEST_SKIP() << "needs root (eBPF, ptrace for the exact trace)";
  if (access("/usr/bin/zstd", X_OK) != 0 || access("/usr/bin/setarch", X_OK) != 0)
    GTEST_SKIP() << "needs /usr/bin/zstd and /usr/bin/setarch (Debian: zstd, util-linux; "
                    "scripts/install-deps.sh installs both)";
  char dir[] = "/tmp/pathprof-zstd-snapshot-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  testing::WriteZstdText(dir, 200000);
  auto exact = testing::ExactRoundShares(testing::ZstdRounds(dir, 2), testing::ZstdRounds(dir, 1));
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  const SnapshotRun run = Record(testing::ZstdLongRun(dir), "", 10);
  std::filesystem::remove_all(dir);
  ASSERT_GT(run.windows.size(), 100u);
  const double top = Report("zstd", *exact, run);
  // The bar is 98%. Snapshot windows alone get 7-14% here with any weighting: zstd's
  // match loops branch on the input and on its hash tables, which no snapshot holds, so no
  // window holds those paths whole and their weight goes to the paths windows do hold
  // (docs/profiles.md "Ragged windows"). The assertion guards against regressions; the bar is
  // printed. (The guard was 15%, set when this test measured 22-26% against a reference that
  // held the start-up of sh and setarch; against the corrected one the per-run loop model gave
  // 12.7% and windows timed as they ran 7.7%, docs/profiles.md "Windows timed as they ran".)
  std::printf("bar 98%%: %s\n", top >= 0.98 ? "met" : "not met");
  EXPECT_GE(top, 0.05);
}

}  // namespace
}  // namespace pathprof::collectors
