// pathctl export --format perf-lbr: an exact trace of a real run becomes a perf.data of branch
// stacks that perf reads back with exactly the traced branches, and that BOLT's perf2bolt and
// llvm-bolt take as they take a `perf record -b` of the same program. --format bolt: the same
// trace written as BOLT's fdata directly, with every branch counted once. Needs root (ptrace) for
// the trace; skips where perf or bolt-15 is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "pathprof/core/pbs.h"

namespace {

namespace fs = std::filesystem;
using CmdResult = pathprof::testing::CommandResult;

CmdResult Shell(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd);
}

class ExportPerfLbrTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "tracing needs root (ptrace)";
    dir_ = fs::temp_directory_path() / ("pathprof-export-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Traces `program args` exactly and exports it; returns the perf.data path.
  std::string TraceAndExport(const std::string& program, const std::string& args) {
    const std::string pbs = (dir_ / "trace.pbs").string();
    const std::string data = (dir_ / "trace.data").string();
    CmdResult t = Shell(std::string(PATHPROF_BIN_DIR) + "/pathctl trace --exact -o " + pbs +
                        " -- " + program + " " + args + " 2>&1");
    EXPECT_EQ(t.rc, 0) << t.out;
    CmdResult e = Shell(std::string(PATHPROF_BIN_DIR) + "/pathctl export --format perf-lbr " + pbs +
                        " -o " + data + " 2>&1");
    EXPECT_EQ(e.rc, 0) << e.out;
    EXPECT_NE(e.out.find("every taken branch appears in exactly one sample"), std::string::npos)
        << e.out;
    return data;
  }
  fs::path dir_;
};

TEST_F(ExportPerfLbrTest, PerfScriptListsExactlyTheTracedBranches) {
  if (Shell("command -v perf >/dev/null").rc != 0) GTEST_SKIP() << "perf is not installed";
  const std::string data =
      TraceAndExport(std::string(PATHPROF_BIN_DIR) + "/example_loop_static", "3000");
  // The images come with their build-ids, as perf buildid-list reads them from the header.
  const std::string program = std::string(PATHPROF_BIN_DIR) + "/example_loop_static";
  CmdResult id = Shell("readelf -n " + program + " | sed -n 's/.*Build ID: //p'");
  CmdResult listed_ids = Shell("perf buildid-list -i " + data + " 2>&1");
  if (!id.out.empty()) {
    EXPECT_NE(listed_ids.out.find(id.out.substr(0, 40) + " " + program), std::string::npos)
        << listed_ids.out << " / " << id.out;
  }
  // The trace's taken branches, in order.
  auto pbs = pathprof::ReadPbsFile((dir_ / "trace.pbs").string());
  ASSERT_TRUE(pbs.ok()) << pbs.status().ToString();
  std::vector<std::pair<uint64_t, uint64_t>> traced;
  for (const pathprof::BranchBatch& b : pbs->batches)
    for (const pathprof::BranchEvent& e : b.events)
      if (e.taken) traced.emplace_back(e.from, e.to);
  ASSERT_GT(traced.size(), 1000u);
  // perf's view: each sample's branch stack, newest first.
  CmdResult script = Shell("perf script -F brstack -i " + data + " 2>/dev/null");
  ASSERT_EQ(script.rc, 0);
  const std::regex entry("0x([0-9a-f]+)/0x([0-9a-f]+)/");
  std::vector<std::pair<uint64_t, uint64_t>> listed;
  std::istringstream lines(script.out);
  std::string line;
  size_t samples = 0;
  while (std::getline(lines, line)) {
    std::vector<std::pair<uint64_t, uint64_t>> stack;
    for (std::sregex_iterator it(line.begin(), line.end(), entry), end; it != end; ++it)
      stack.emplace_back(std::stoull((*it)[1], nullptr, 16), std::stoull((*it)[2], nullptr, 16));
    if (stack.empty()) continue;
    ++samples;
    EXPECT_EQ(stack.size(), 32u) << line;
    listed.insert(listed.end(), stack.rbegin(), stack.rend());  // oldest first
  }
  // Consecutive samples of 32: every taken branch once, in order, up to the last full sample.
  ASSERT_EQ(samples, traced.size() / 32);
  traced.resize(samples * 32);
  EXPECT_TRUE(listed == traced) << "perf script lists other branches than the trace has";
}

TEST_F(ExportPerfLbrTest, Perf2boltAndLlvmBoltTakeTheProfile) {
  if (access("/usr/bin/llvm-bolt-15", X_OK) != 0)
    GTEST_SKIP() << "bolt-15 is not installed (Debian package bolt-15)";
  const std::string program = std::string(PATHPROF_BIN_DIR) + "/example_hotloop_relocs";
  const std::string data = TraceAndExport(program, "5");
  const std::string fdata = (dir_ / "profile.fdata").string();
  // perf2bolt is llvm-bolt -aggregate-only; Debian's perf2bolt-15 name is not recognised as
  // perf2bolt by the binary (it then optimizes instead of aggregating), so say it outright.
  CmdResult p2b =
      Shell("llvm-bolt-15 " + program + " -aggregate-only -p " + data + " -o " + fdata + " 2>&1");
  ASSERT_EQ(p2b.rc, 0) << p2b.out;
  EXPECT_EQ(p2b.out.find("ERROR"), std::string::npos) << p2b.out;
  EXPECT_NE(p2b.out.find("traces mismatching disassembled function contents: 0 "),
            std::string::npos)
      << p2b.out;
  // perf2bolt matched the samples to the binary: the profile names the hot loops' functions.
  std::ifstream in(fdata);
  const std::string profile((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(profile.find(" hot "), std::string::npos) << profile.substr(0, 600);
  EXPECT_NE(profile.find(" warm "), std::string::npos) << profile.substr(0, 600);
  const std::string bolted = (dir_ / "hotloop.bolt").string();
  CmdResult bolt = Shell("llvm-bolt-15 " + program + " -o " + bolted + " -data " + fdata +
                         " -reorder-blocks=ext-tsp -reorder-functions=hfsort 2>&1");
  ASSERT_EQ(bolt.rc, 0) << bolt.out;
  EXPECT_NE(bolt.out.find("have non-empty execution profile"), std::string::npos) << bolt.out;
  // The optimized program still runs to the same end.
  CmdResult a = Shell(program + " 3000 2>&1"), b = Shell(bolted + " 3000 2>&1");
  EXPECT_EQ(a.rc, 0);
  EXPECT_EQ(b.rc, a.rc) << b.out;
  EXPECT_EQ(a.out, b.out);
}

// fdata lines keyed by "FROM-END TO-END" (the first six fields), with their counts.
std::map<std::string, long long> ReadFdata(const std::string& path) {
  std::map<std::string, long long> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string w[8];
    for (std::string& x : w) f >> x;
    if (w[7].empty()) continue;  // a header line such as no_lbr
    lines[w[0] + " " + w[1] + " " + w[2] + " " + w[3] + " " + w[4] + " " + w[5]] = std::stoll(w[7]);
  }
  return lines;
}

std::string FunctionsWithProfile(const std::string& bolt_output) {
  std::smatch m;
  std::regex re("(\\d+) out of \\d+ functions in the binary");
  return std::regex_search(bolt_output, m, re) ? m[1].str() : "";
}

TEST_F(ExportPerfLbrTest, BoltFdataCountsEveryBranchOnceAndLlvmBoltTakesIt) {
  if (access("/usr/bin/llvm-bolt-15", X_OK) != 0)
    GTEST_SKIP() << "bolt-15 is not installed (Debian package bolt-15)";
  const std::string program = std::string(PATHPROF_BIN_DIR) + "/example_hotloop_relocs";
  const int rounds = 5;
  const std::string data = TraceAndExport(program, std::to_string(rounds));
  const std::string pbs = (dir_ / "trace.pbs").string();
  const std::string ours = (dir_ / "direct.fdata").string();
  const std::string theirs = (dir_ / "perf2bolt.fdata").string();
  CmdResult e = Shell(std::string(PATHPROF_BIN_DIR) + "/pathctl export --format bolt " + pbs +
                      " -o " + ours + " 2>&1");
  ASSERT_EQ(e.rc, 0) << e.out;
  EXPECT_NE(e.out.find("exact branch counts"), std::string::npos) << e.out;
  ASSERT_EQ(Shell("llvm-bolt-15 " + program + " -aggregate-only -p " + data + " -o " + theirs +
                  " >/dev/null 2>&1")
                .rc,
            0);
  std::map<std::string, long long> direct = ReadFdata(ours), aggregated = ReadFdata(theirs);
  ASSERT_FALSE(direct.empty());

  // The hot loop's 3:1 branch: 1500 of its 2000 iterations a round go one way, exactly.
  long long hot_max = 0;
  bool has_other_side = false;
  for (const auto& [key, count] : direct) {
    if (key.starts_with("1 hot ") && key.find(" 1 hot ") != std::string::npos) {
      hot_max = std::max(hot_max, count);
      has_other_side |= count == 500LL * rounds;
    }
  }
  EXPECT_EQ(hot_max, 1500LL * rounds);
  EXPECT_TRUE(has_other_side) << "no line counts the loop's 500-a-round side";

  // perf2bolt, reading the perf-lbr export of the same trace, names the same functions and
  // offsets. Its counts are never higher; they are lower only where a fall-through crossed
  // one of the export's sample boundaries (perf2bolt cannot see the code before a sample's
  // oldest branch), so by at most one per sample. A line it lacks is such a count lowered to
  // 0: a fall-through in main run once (`1 main a 1 main c`, count 1) was missing whenever a
  // boundary fell on it, which depends on how many branches the loader took before main.
  auto trace = pathprof::ReadPbsFile(pbs);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  long long taken = 0;
  for (const pathprof::BranchBatch& b : trace->batches)
    for (const pathprof::BranchEvent& ev : b.events) taken += ev.taken;
  const long long samples = taken / 32 + 1;
  int compared = 0;
  for (const auto& [key, count] : direct) {
    if (key.find("[unknown]") != std::string::npos) continue;  // PLT stubs: BOLT names them
    auto it = aggregated.find(key);
    const long long theirs_count = it == aggregated.end() ? 0 : it->second;
    EXPECT_GE(count, theirs_count) << key;
    EXPECT_LE(count - theirs_count, samples)
        << (it == aggregated.end() ? "perf2bolt has no line " : "") << key;
    ++compared;
  }
  EXPECT_GT(compared, 10);
  // And nothing perf2bolt found is missing: its fall-throughs into jump targets (which it finds
  // from BOLT's CFG) are there too. PLT stubs and addresses outside functions aside.
  for (const auto& [key, count] : aggregated) {
    if (key.find("[unknown]") != std::string::npos || key.find("PLT") != std::string::npos)
      continue;
    EXPECT_TRUE(direct.count(key)) << "missing line " << key << " (count " << count << ")";
  }

  // llvm-bolt finds a profile for as many functions as with perf2bolt's file, and the
  // optimized program runs to the same end.
  const std::string bolted = (dir_ / "direct.bolt").string();
  CmdResult a = Shell("llvm-bolt-15 " + program + " -o " + bolted + " -data " + ours +
                      " -reorder-blocks=ext-tsp -reorder-functions=hfsort 2>&1");
  ASSERT_EQ(a.rc, 0) << a.out;
  CmdResult b = Shell("llvm-bolt-15 " + program + " -o " + bolted + ".2 -data " + theirs +
                      " -reorder-blocks=ext-tsp -reorder-functions=hfsort 2>&1");
  ASSERT_EQ(b.rc, 0) << b.out;
  EXPECT_NE(FunctionsWithProfile(a.out), "") << a.out;
  EXPECT_EQ(FunctionsWithProfile(a.out), FunctionsWithProfile(b.out)) << a.out << b.out;
  CmdResult plain = Shell(program + " 3000 2>&1"), opt = Shell(bolted + " 3000 2>&1");
  EXPECT_EQ(opt.rc, plain.rc) << opt.out;
  EXPECT_EQ(opt.out, plain.out);
}

TEST_F(ExportPerfLbrTest, BoltFormatNamesWhatIsWrong) {
  const std::string pathctl = std::string(PATHPROF_BIN_DIR) + "/pathctl";
  CmdResult missing = Shell(pathctl + " export --format bolt " + (dir_ / "none.pbs").string() +
                            " -o " + (dir_ / "x.fdata").string() + " 2>&1");
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.out.find("none.pbs"), std::string::npos) << missing.out;
  // A binary the recording never mapped is named, with what to do.
  pathprof::PbsContents empty;
  empty.images.push_back({1, 0x400000, 0x401000, 0, "/bin/true", ""});
  const std::string pbs = (dir_ / "one.pbs").string();
  ASSERT_TRUE(pathprof::WritePbsFile(pbs, empty).ok());
  CmdResult other = Shell(pathctl + " export --format bolt " + pbs + " --binary /bin/sh -o " +
                          (dir_ / "x.fdata").string() + " 2>&1");
  EXPECT_NE(other.rc, 0);
  EXPECT_NE(other.out.find("never mapped /bin/sh"), std::string::npos) << other.out;
  CmdResult mixed = Shell(pathctl + " export --format perf-lbr " + pbs + " --binary /bin/sh -o " +
                          (dir_ / "x.data").string() + " 2>&1");
  EXPECT_EQ(mixed.rc, 2) << mixed.out;
  EXPECT_NE(mixed.out.find("--binary goes with --format bolt"), std::string::npos) << mixed.out;
}

}  // namespace
