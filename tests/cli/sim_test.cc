// Runs `pathctl sim` as a user would and reads its JSON output back into the pathprof.v1
// messages it maps (proto/pathprof/v1/sim.proto), as any consumer would.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/synth/executor.h"
#include "pathprof/v1/sim.pb.h"

#include "common/run_command.h"

namespace {

using CmdResult = pathprof::testing::CommandResult;
namespace v1 = pathprof::v1;

CmdResult Pathctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args +
                                       " 2>&1");
}

// The output parsed strictly into `message` (an unknown field or a stray line fails, as a drifted
// schema would).
::testing::AssertionResult Parse(const CmdResult& r, google::protobuf::Message* message) {
  const auto status = google::protobuf::util::JsonStringToMessage(r.out, message);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.ToString() << ": " << r.out.substr(0, 2000);
}

TEST(PathctlSim, JsonHasTheFieldsAndSaneValues) {
  CmdResult r = Pathctl(
      "sim --workload branchy --seed 1 --branches 300000 --dynamic-window 100000 "
      "--top 5 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  v1::SimReport report;
  ASSERT_TRUE(Parse(r, &report));
  EXPECT_EQ(report.mode(), v1::SIM_MODE_FULL);
  EXPECT_EQ(report.branches(), 300000);
  EXPECT_EQ(report.hpt_entries(), 512);
  EXPECT_EQ(report.hpt_ways(), 4);
  EXPECT_EQ(report.dynamic_windows(), 3);
  EXPECT_GE(report.overlap_pct(), 90.0);
  EXPECT_LE(report.overlap_pct(), 100.0);
  ASSERT_TRUE(report.has_dynamic_overlap_pct()) << r.out;
  EXPECT_GE(report.dynamic_overlap_pct(), 90.0);
  EXPECT_LE(report.dynamic_overlap_pct(), 100.0);
  EXPECT_GT(report.paths_distinct(), 100);
  ASSERT_EQ(report.top_size(), 5);
  for (const auto& p : report.top()) EXPECT_NE(p.start(), 0u) << r.out;
  // The hottest path was counted exactly: nothing can evict the heaviest entry under LFU.
  EXPECT_EQ(report.top(0).relative_error(), 0.0);
}

// The accuracy bar at its own setting (512x4, XOR index, LFU, Ball-Larus paths, 20M
// branches, 10M-branch dynamic windows): complete >= 95% and dynamic >= 98% on the bundled
// workloads whose path working set a 512-entry table can hold; `large` is built to exceed it
// (docs/hwmodel.md explains its figures).
class PathctlSimBar : public ::testing::TestWithParam<const char*> {};

TEST_P(PathctlSimBar, MeetsTheBarAt512x4) {
  CmdResult r = Pathctl(std::string("sim --workload ") + GetParam() +
                        " --seed 1 --branches 20000000 --hpt 512x4 --index xor --replacement lfu"
                        " --paths bl --dynamic-window 10000000 --top 1 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  v1::SimReport report;
  ASSERT_TRUE(Parse(r, &report));
  EXPECT_EQ(report.dynamic_windows(), 2);
  EXPECT_GE(report.overlap_pct(), 95.0) << r.out;
  ASSERT_TRUE(report.has_dynamic_overlap_pct()) << r.out;
  EXPECT_GE(report.dynamic_overlap_pct(), 98.0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Workloads, PathctlSimBar, ::testing::Values("loops", "branchy", "calls"),
                         [](const auto& info) { return std::string(info.param); });

TEST(PathctlSim, LargeWorkloadStressesTheTable) {
  CmdResult small = Pathctl("sim --workload loops --branches 400000 --json --top 0");
  CmdResult large = Pathctl("sim --workload large --branches 400000 --json --top 0");
  ASSERT_EQ(small.rc, 0) << small.out;
  ASSERT_EQ(large.rc, 0) << large.out;
  v1::SimReport s, l;
  ASSERT_TRUE(Parse(small, &s));
  ASSERT_TRUE(Parse(large, &l));
  EXPECT_GT(l.paths_distinct(), 5000);
  EXPECT_LT(s.paths_distinct(), 512);
  EXPECT_GE(s.overlap_pct(), 99.0);
  EXPECT_LT(l.overlap_pct(), 90.0);
  // A table bigger than the working set is exact.
  EXPECT_DOUBLE_EQ(s.ideal_overlap_pct(), 100.0);
}

TEST(PathctlSim, PbsReplayMatchesTheLiveStream) {
  std::string path = ::testing::TempDir() + "cli_sim_" + std::to_string(getpid()) + ".pbs";
  auto spec = pathprof::synth::BundledWorkload("calls", 2);
  ASSERT_TRUE(pathprof::synth::WriteSyntheticPbs(*spec, 200000, path, 50000).ok());
  CmdResult live = Pathctl("sim --workload calls --seed 2 --branches 200000 --json --top 3");
  CmdResult replay = Pathctl("sim --pbs " + path + " --json --top 3");
  std::remove(path.c_str());
  ASSERT_EQ(live.rc, 0) << live.out;
  ASSERT_EQ(replay.rc, 0) << replay.out;
  v1::SimReport l, r;
  ASSERT_TRUE(Parse(live, &l));
  ASSERT_TRUE(Parse(replay, &r));
  EXPECT_EQ(r.branches(), 200000);
  EXPECT_EQ(l.overlap_pct(), r.overlap_pct());
  EXPECT_EQ(l.paths_distinct(), r.paths_distinct());
  // The same hot paths, field for field.
  v1::SimReport live_top, replay_top;
  *live_top.mutable_top() = l.top();
  *replay_top.mutable_top() = r.top();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(live_top, replay_top))
      << live.out << "\n"
      << replay.out;
}

TEST(PathctlSim, SamplingModesAndSweepProduceValidJson) {
  for (const char* args :
       {"--sample-interval 200 --burst-length 50", "--window 32 --period 4",
        "--paths extended:calls:1 --metric cycles", "--index start --replacement lru"}) {
    CmdResult r = Pathctl(std::string("sim --workload branchy --branches 200000 --json ") + args);
    ASSERT_EQ(r.rc, 0) << args << "\n" << r.out;
    v1::SimReport report;
    EXPECT_TRUE(Parse(r, &report)) << args;
    EXPECT_GT(report.overlap_pct(), 50.0) << args;
  }
  CmdResult sweep = Pathctl(
      "sim --sweep --workload loops,calls --branches 100000 --sizes 128,512 "
      "--ways 2,4 --json");
  ASSERT_EQ(sweep.rc, 0) << sweep.out;
  v1::SimSweepReport report;
  ASSERT_TRUE(Parse(sweep, &report));
  ASSERT_EQ(report.workloads_size(), 2) << sweep.out;
  int cells = 0;
  for (const auto& w : report.workloads()) cells += w.cells_size();
  EXPECT_EQ(cells, 8);
}

TEST(PathctlSim, BadArgumentsAreUsageErrors) {
  for (const char* args :
       {"--workload nope", "--hpt 500x3", "--hpt big", "--paths zigzag", "--metric heat",
        "--frobnicate 1", "--window 8", "--pbs /nonexistent.pbs"}) {
    CmdResult r = Pathctl(std::string("sim --branches 1000 ") + args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("pathctl sim:"), std::string::npos) << args;
  }
}

// The first `n` branch events of a bundled workload, as pathctl sim generates them.
std::vector<pathprof::BranchEvent> WorkloadEvents(const std::string& name, uint64_t seed,
                                                  size_t n) {
  auto spec = pathprof::synth::BundledWorkload(name, seed);
  auto stream = pathprof::synth::SyntheticStream::Create(*spec);
  std::vector<pathprof::BranchEvent> out;
  pathprof::BranchBatch batch;
  while (out.size() < n) {
    stream->NextBatch(std::min<size_t>(n - out.size(), 1 << 16), &batch);
    out.insert(out.end(), batch.events.begin(), batch.events.end());
  }
  return out;
}

TEST(PathctlSim, SubpathsReportEstimatesBoundsAndExactCounts) {
  constexpr size_t kBranches = 300000;
  CmdResult r = Pathctl(
      "sim --workload loops --seed 1 --branches 300000 --subpaths "
      "--osp-memory 1500 --osp-max-length 32 --top 20 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  v1::SimStreamProfilesReport report;
  ASSERT_TRUE(Parse(r, &report));
  ASSERT_TRUE(report.has_subpaths()) << r.out;
  EXPECT_FALSE(report.has_calls()) << r.out;
  const v1::SimSubpaths& sp = report.subpaths();
  EXPECT_EQ(sp.blocks(), static_cast<int64_t>(kBranches));  // one block per branch target
  EXPECT_EQ(sp.max_length(), 32);
  EXPECT_EQ(sp.memory_limit_entries(), 1500);
  EXPECT_LE(sp.entries(), 1500);
  EXPECT_GT(sp.memory_bytes(), 0);
  ASSERT_EQ(sp.top_size(), 20);
  EXPECT_EQ(sp.reported(), 20);
  const double f = sp.f();
  EXPECT_GE(f, 2);  // --osp-min-f default

  // The hottest entry: estimate = samples * f / P(length), P(2^n) = 2^-n / (31/32) for
  // lengths 2..32; bound = sqrt(2 ln(1/(1-0.95)) / samples) (eq. 2.15).
  const v1::SimSubpath& top = sp.top(0);
  const double len = top.length(), samples = static_cast<double>(top.sample_count());
  const double p_length = (1 / len) / (31.0 / 32.0);
  EXPECT_NEAR(top.estimate(), samples * f / p_length, 1e-6 * samples * f / p_length);
  EXPECT_NEAR(top.error_bound(), std::sqrt(2 * std::log(20.0) / samples), 1e-9);

  // Its exact count, recounted here: windows of the block stream that are a rotation of it.
  const std::vector<uint64_t> blocks(top.blocks().begin(), top.blocks().end());
  ASSERT_EQ(blocks.size(), static_cast<size_t>(len));
  const auto events = WorkloadEvents("loops", 1, kBranches);
  uint64_t exact = 0;
  for (size_t i = 0; i + blocks.size() <= events.size(); ++i) {
    for (size_t rot = 0; rot < blocks.size(); ++rot) {
      size_t k = 0;
      while (k < blocks.size() && events[i + k].to == blocks[(rot + k) % blocks.size()]) ++k;
      if (k == blocks.size()) {
        ++exact;
        break;
      }
    }
  }
  EXPECT_GT(exact, 1000u);
  EXPECT_EQ(top.exact(), static_cast<int64_t>(exact));
  EXPECT_LT(std::abs(top.error()), top.error_bound());
  // Most of the 95% intervals hold the exact count.
  EXPECT_GE(sp.within_bound(), 18);
  EXPECT_LE(sp.median_abs_error_top10(), 0.05);
}

TEST(PathctlSim, CallsReportMatchesExactCallCounts) {
  constexpr size_t kBranches = 300000;
  // The hottest call pair and the number of taken calls, counted here.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> pairs;
  uint64_t calls = 0;
  for (const auto& e : WorkloadEvents("calls", 2, kBranches)) {
    if (!pathprof::IsCall(e.kind) || !e.taken) continue;
    ++calls;
    ++pairs[{e.from, e.to}];
  }
  uint64_t hottest = 0;
  for (const auto& [p, c] : pairs) hottest = std::max(hottest, c);
  ASSERT_GT(calls, 1000u);

  CmdResult full =
      Pathctl("sim --workload calls --seed 2 --branches 300000 --calls --top 3 --json");
  ASSERT_EQ(full.rc, 0) << full.out;
  v1::SimStreamProfilesReport full_report;
  ASSERT_TRUE(Parse(full, &full_report));
  ASSERT_TRUE(full_report.has_calls()) << full.out;
  EXPECT_FALSE(full_report.has_subpaths()) << full.out;
  const v1::SimCalls& c = full_report.calls();
  EXPECT_EQ(c.mode(), v1::SIM_MODE_FULL);
  EXPECT_EQ(c.calls_exact(), static_cast<int64_t>(calls));
  EXPECT_EQ(c.calls_sampled(), static_cast<int64_t>(calls));
  EXPECT_EQ(c.call_pairs().distinct_exact(), static_cast<int64_t>(pairs.size()));
  ASSERT_EQ(c.call_pairs().top_size(), 3) << full.out;
  const v1::SimCallPair& pair_top = c.call_pairs().top(0);
  EXPECT_EQ(pair_top.estimate(), static_cast<double>(hottest));
  EXPECT_EQ(pair_top.exact(), static_cast<double>(hottest));
  EXPECT_EQ(pair_top.exact_rank(), 1);
  // Its addresses name a pair the stream made as often as the hottest.
  const auto it = pairs.find({pair_top.call_site(), pair_top.target()});
  ASSERT_NE(it, pairs.end()) << full.out;
  EXPECT_EQ(it->second, hottest);
  EXPECT_DOUBLE_EQ(c.call_pairs().hps_overlap_pct(), 100.0);
  EXPECT_EQ(c.methods().top_size(), 3);

  // Bursty sampling sees about one call in ten and still finds the same hot pairs.
  CmdResult bursty = Pathctl(
      "sim --workload calls --seed 2 --branches 300000 --calls --sample-interval 900 "
      "--burst-length 100 --json");
  ASSERT_EQ(bursty.rc, 0) << bursty.out;
  v1::SimStreamProfilesReport bursty_report;
  ASSERT_TRUE(Parse(bursty, &bursty_report));
  const v1::SimCalls& b = bursty_report.calls();
  EXPECT_EQ(b.mode(), v1::SIM_MODE_BURSTY);
  EXPECT_DOUBLE_EQ(b.sampling_period(), 10.0);
  const double sampled = static_cast<double>(b.calls_sampled());
  EXPECT_LT(sampled, calls * 0.5);
  EXPECT_GT(sampled, calls * 0.02);
  const double hps = b.call_pairs().hps_overlap_pct();
  EXPECT_GT(hps, 60.0);
  EXPECT_LT(hps, 100.0);
}

TEST(PathctlSim, BadStreamProfileArgumentsAreUsageErrors) {
  for (const char* args : {"--subpaths --osp-max-length 24", "--subpaths --confidence 1.5",
                           "--subpaths --osp-memory 0", "--calls --window 8",
                           "--calls --window 8 --period 2 --burst-length 10"}) {
    CmdResult r = Pathctl(std::string("sim --branches 1000 ") + args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("pathctl sim:"), std::string::npos) << args;
  }
}

}  // namespace
