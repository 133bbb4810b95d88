// Runs `pathctl sim` as a user would and checks its JSON output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/synth/executor.h"

#include "common/run_command.h"

namespace {

using CmdResult = pathprof::testing::CommandResult;

CmdResult Pathctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args +
                                       " 2>&1");
}

// A strict little JSON validator (RFC 8259 grammar), so the test needs no JSON library.
class JsonCheck {
 public:
  explicit JsonCheck(const std::string& s) : s_(s) {}
  bool Valid() {
    Ws();
    if (!Value()) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    std::string t(w);
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }
  bool String() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      unsigned char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_])))
              return false;
        } else if (std::string("\"\\/bfnrt").find(s_[i_]) == std::string::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool Number() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    return i_ > start;
  }
  bool Value() {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++i_;
      Ws();
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      for (;;) {
        Ws();
        if (c == '{') {
          if (i_ >= s_.size() || !String()) return false;
          Ws();
          if (i_ >= s_.size() || s_[i_++] != ':') return false;
          Ws();
        }
        if (!Value()) return false;
        Ws();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == close) {
          ++i_;
          return true;
        }
        return false;
      }
    }
    if (c == '"') return String();
    if (c == 't') return Lit("true");
    if (c == 'f') return Lit("false");
    if (c == 'n') return Lit("null");
    return Number();
  }
  const std::string& s_;
  size_t i_ = 0;
};

// The number after "key": at its first occurrence; NaN when absent.
double Field(const std::string& json, const std::string& key) {
  auto p = json.find("\"" + key + "\":");
  if (p == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + p + key.size() + 3, nullptr);
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(PathctlSim, JsonHasTheFieldsAndSaneValues) {
  CmdResult r = Pathctl(
      "sim --workload branchy --seed 1 --branches 300000 --dynamic-window 100000 "
      "--top 5 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(JsonCheck(r.out).Valid()) << r.out;
  EXPECT_EQ(Field(r.out, "branches"), 300000);
  EXPECT_EQ(Field(r.out, "hpt_entries"), 512);
  EXPECT_EQ(Field(r.out, "hpt_ways"), 4);
  EXPECT_EQ(Field(r.out, "dynamic_windows"), 3);
  double overlap = Field(r.out, "overlap_pct");
  EXPECT_GE(overlap, 90.0);
  EXPECT_LE(overlap, 100.0);
  double dynamic = Field(r.out, "dynamic_overlap_pct");
  EXPECT_GE(dynamic, 90.0);
  EXPECT_LE(dynamic, 100.0);
  EXPECT_GT(Field(r.out, "paths_distinct"), 100);
  EXPECT_EQ(Count(r.out, "\"outcomes\":"), 5u);
  EXPECT_EQ(Count(r.out, "\"start\":\"0x"), 5u);
  // The hottest path was counted exactly: nothing can evict the heaviest entry under LFU.
  EXPECT_EQ(Field(r.out, "relative_error"), 0.0);
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
  EXPECT_EQ(Field(r.out, "dynamic_windows"), 2);
  EXPECT_GE(Field(r.out, "overlap_pct"), 95.0) << r.out;
  EXPECT_GE(Field(r.out, "dynamic_overlap_pct"), 98.0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Workloads, PathctlSimBar, ::testing::Values("loops", "branchy", "calls"),
                         [](const auto& info) { return std::string(info.param); });

TEST(PathctlSim, LargeWorkloadStressesTheTable) {
  CmdResult small = Pathctl("sim --workload loops --branches 400000 --json --top 0");
  CmdResult large = Pathctl("sim --workload large --branches 400000 --json --top 0");
  ASSERT_EQ(small.rc, 0) << small.out;
  ASSERT_EQ(large.rc, 0) << large.out;
  EXPECT_GT(Field(large.out, "paths_distinct"), 5000);
  EXPECT_LT(Field(small.out, "paths_distinct"), 512);
  EXPECT_GE(Field(small.out, "overlap_pct"), 99.0);
  EXPECT_LT(Field(large.out, "overlap_pct"), 90.0);
  // A table bigger than the working set is exact.
  EXPECT_DOUBLE_EQ(Field(small.out, "ideal_overlap_pct"), 100.0);
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
  EXPECT_EQ(Field(replay.out, "branches"), 200000);
  EXPECT_EQ(Field(live.out, "overlap_pct"), Field(replay.out, "overlap_pct"));
  EXPECT_EQ(Field(live.out, "paths_distinct"), Field(replay.out, "paths_distinct"));
  EXPECT_EQ(live.out.substr(live.out.find("\"top\"")),
            replay.out.substr(replay.out.find("\"top\"")));
}

TEST(PathctlSim, SamplingModesAndSweepProduceValidJson) {
  for (const char* args :
       {"--sample-interval 200 --burst-length 50", "--window 32 --period 4",
        "--paths extended:calls:1 --metric cycles", "--index start --replacement lru"}) {
    CmdResult r = Pathctl(std::string("sim --workload branchy --branches 200000 --json ") + args);
    ASSERT_EQ(r.rc, 0) << args << "\n" << r.out;
    EXPECT_TRUE(JsonCheck(r.out).Valid()) << args << "\n" << r.out;
    EXPECT_GT(Field(r.out, "overlap_pct"), 50.0) << args;
  }
  CmdResult sweep = Pathctl(
      "sim --sweep --workload loops,calls --branches 100000 --sizes 128,512 "
      "--ways 2,4 --json");
  ASSERT_EQ(sweep.rc, 0) << sweep.out;
  EXPECT_TRUE(JsonCheck(sweep.out).Valid()) << sweep.out;
  EXPECT_EQ(Count(sweep.out, "\"hpt_entries\":"), 8u);
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

// The hex strings of the first JSON array after `from`.
std::vector<uint64_t> HexArray(const std::string& json, size_t from) {
  std::vector<uint64_t> out;
  size_t open = json.find('[', from), close = json.find(']', open);
  for (size_t p = json.find("\"0x", open); p < close; p = json.find("\"0x", p + 1))
    out.push_back(std::strtoull(json.c_str() + p + 1, nullptr, 16));
  return out;
}

TEST(PathctlSim, SubpathsReportEstimatesBoundsAndExactCounts) {
  constexpr size_t kBranches = 300000;
  CmdResult r = Pathctl(
      "sim --workload loops --seed 1 --branches 300000 --subpaths "
      "--osp-memory 1500 --osp-max-length 32 --top 20 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_TRUE(JsonCheck(r.out).Valid()) << r.out;
  EXPECT_EQ(Field(r.out, "blocks"), kBranches);  // one block per branch target
  EXPECT_EQ(Field(r.out, "max_length"), 32);
  EXPECT_EQ(Field(r.out, "memory_limit_entries"), 1500);
  EXPECT_LE(Field(r.out, "entries"), 1500);
  EXPECT_GT(Field(r.out, "memory_bytes"), 0);
  EXPECT_EQ(Count(r.out, "\"sample_count\":"), 20u);
  const double f = Field(r.out, "f");
  EXPECT_GE(f, 2);  // --osp-min-f default

  // The hottest entry: estimate = samples * f / P(length), P(2^n) = 2^-n / (31/32) for
  // lengths 2..32; bound = sqrt(2 ln(1/(1-0.95)) / samples) (eq. 2.15).
  const std::string top = r.out.substr(r.out.find("\"top\":["));
  const double len = Field(top, "length"), samples = Field(top, "sample_count");
  const double p_length = (1 / len) / (31.0 / 32.0);
  EXPECT_NEAR(Field(top, "estimate"), samples * f / p_length, 1e-6 * samples * f / p_length);
  EXPECT_NEAR(Field(top, "error_bound"), std::sqrt(2 * std::log(20.0) / samples), 1e-9);

  // Its exact count, recounted here: windows of the block stream that are a rotation of it.
  const std::vector<uint64_t> blocks = HexArray(top, top.find("\"blocks\":"));
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
  EXPECT_EQ(Field(top, "exact"), static_cast<double>(exact));
  EXPECT_LT(std::abs(Field(top, "error")), Field(top, "error_bound"));
  // Most of the 95% intervals hold the exact count.
  EXPECT_GE(Field(r.out, "within_bound"), 18);
  EXPECT_LE(Field(r.out, "median_abs_error_top10"), 0.05);
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
  ASSERT_TRUE(JsonCheck(full.out).Valid()) << full.out;
  EXPECT_EQ(Field(full.out, "calls_exact"), static_cast<double>(calls));
  EXPECT_EQ(Field(full.out, "calls_sampled"), static_cast<double>(calls));
  EXPECT_EQ(Field(full.out, "distinct_exact"), static_cast<double>(pairs.size()));
  const std::string pair_top = full.out.substr(full.out.find("\"call_pairs\""));
  EXPECT_EQ(Field(pair_top, "estimate"), static_cast<double>(hottest));
  EXPECT_EQ(Field(pair_top, "exact"), static_cast<double>(hottest));
  EXPECT_EQ(Field(pair_top, "exact_rank"), 1);
  EXPECT_DOUBLE_EQ(Field(pair_top, "hps_overlap_pct"), 100.0);
  EXPECT_EQ(Count(full.out, "\"pair\":"), 3u);
  EXPECT_EQ(Count(full.out, "\"function\":"), 3u);

  // Bursty sampling sees about one call in ten and still finds the same hot pairs.
  CmdResult bursty = Pathctl(
      "sim --workload calls --seed 2 --branches 300000 --calls --sample-interval 900 "
      "--burst-length 100 --json");
  ASSERT_EQ(bursty.rc, 0) << bursty.out;
  ASSERT_TRUE(JsonCheck(bursty.out).Valid()) << bursty.out;
  EXPECT_DOUBLE_EQ(Field(bursty.out, "sampling_period"), 10.0);
  const double sampled = Field(bursty.out, "calls_sampled");
  EXPECT_LT(sampled, calls * 0.5);
  EXPECT_GT(sampled, calls * 0.02);
  const std::string bursty_pairs = bursty.out.substr(bursty.out.find("\"call_pairs\""));
  const double hps = Field(bursty_pairs, "hps_overlap_pct");
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
