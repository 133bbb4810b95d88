// `pathctl export` names the BOLT command that works on this host: the perf2bolt hint of a
// perf-lbr export names an executable that exists and, run exactly as printed, writes a valid
// fdata (Debian's perf2bolt-15 would have written an ELF there: BOLT picks its mode by the name
// it is run as); the bolt export's hint names the llvm-bolt that is here. And the search itself
// (bolt_tools.h) on directories laid out by the test.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "pathctl/bolt_tools.h"

namespace {

namespace fs = std::filesystem;
const std::string kBin = PATHPROF_BIN_DIR;

pathprof::testing::CommandResult Shell(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd);
}

// The text after `prefix` on the line that starts with it, or "".
std::string LineAfter(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return "";
}

// The executable a command line starts with: as given when it has a slash, else from PATH.
std::string ExecutableOf(const std::string& command) {
  const std::string first = command.substr(0, command.find(' '));
  if (first.find('/') != std::string::npos) return first;
  std::string found = pathprof::testing::RunCommand("command -v " + first).out;
  while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
  return found;
}

bool BoltInstalled() {
  return !pathctl::FindLlvmBolt(pathctl::PathDirs()).empty();
}

class ExportHintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pathprof-export-hint-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // An exact trace of the relocatable hot-loop example, as BOLT wants its programs.
  std::string Trace() {
    if (geteuid() != 0) return "";
    const std::string pbs = (dir_ / "hot.pbs").string();
    const auto t = Shell(kBin + "/pathctl trace --exact -o " + pbs + " -- " + kBin +
                         "/example_hotloop_relocs 5 2>&1");
    EXPECT_EQ(t.rc, 0) << t.out;
    return pbs;
  }
  // Lays out `path` as an executable file (a shell script that fails: never to be run).
  void Executable(const fs::path& path) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\nexit 1\n";
    chmod(path.c_str(), 0755);
  }
  fs::path dir_;
};

TEST_F(ExportHintTest, Perf2boltHintRunsAsPrintedAndWritesFdata) {
  const std::string pbs = Trace();
  if (pbs.empty()) GTEST_SKIP() << "tracing needs ptrace (root here)";
  const std::string data = (dir_ / "hot.data").string();
  const auto e = Shell(kBin + "/pathctl export --format perf-lbr " + pbs + " -o " + data + " 2>&1");
  ASSERT_EQ(e.rc, 0) << e.out;
  const std::string hint = LineAfter(e.out, "BOLT's fdata from it: ");
  ASSERT_FALSE(hint.empty()) << e.out;
  if (!BoltInstalled()) {
    EXPECT_NE(hint.find("apt-get install bolt-15"), std::string::npos) << hint;
    GTEST_SKIP() << "bolt-15 is not installed: the hint says what to install";
  }
  const std::string exe = ExecutableOf(hint);
  ASSERT_FALSE(exe.empty()) << hint;
  EXPECT_EQ(access(exe.c_str(), X_OK), 0) << exe;
  EXPECT_EQ(fs::path(exe).filename().string().rfind("perf2bolt-", 0), std::string::npos)
      << "perf2bolt-N runs as llvm-bolt: " << hint;
  const std::string fdata = (dir_ / "hot.fdata").string();
  EXPECT_NE(hint.find(fdata), std::string::npos) << hint;
  EXPECT_NE(hint.find(kBin + "/example_hotloop_relocs"), std::string::npos) << hint;
  const auto run = Shell(hint + " 2>&1");
  ASSERT_EQ(run.rc, 0) << hint << "\n" << run.out;
  // Valid fdata: text, every line `1|0 FUNC OFFSET 1|0 FUNC OFFSET MISPREDICTS COUNT`, with
  // the hot loop's function among them.
  std::ifstream in(fdata);
  const std::string profile((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(profile.empty());
  EXPECT_NE(profile.substr(0, 4),
            "\x7f"
            "ELF")
      << "an executable where the fdata was to go";
  const std::regex line(R"([01] \S+ [0-9a-f]+ [01] \S+ [0-9a-f]+ \d+ \d+)");
  std::istringstream lines(profile);
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) EXPECT_TRUE(std::regex_match(l, line)) << l;
  EXPECT_GT(n, 10);
  EXPECT_NE(profile.find(" hot"), std::string::npos) << profile.substr(0, 500);
}

TEST_F(ExportHintTest, BoltHintNamesTheLlvmBoltHere) {
  const std::string pbs = Trace();
  if (pbs.empty()) GTEST_SKIP() << "tracing needs ptrace (root here)";
  const std::string fdata = (dir_ / "direct.fdata").string();
  const auto e = Shell(kBin + "/pathctl export --format bolt " + pbs + " -o " + fdata + " 2>&1");
  ASSERT_EQ(e.rc, 0) << e.out;
  if (!BoltInstalled()) {
    EXPECT_NE(e.out.find("apt-get install bolt-15"), std::string::npos) << e.out;
    return;
  }
  const std::string hint = LineAfter(e.out, "Optimize with: ");
  ASSERT_FALSE(hint.empty()) << e.out;
  EXPECT_EQ(access(ExecutableOf(hint).c_str(), X_OK), 0) << hint;
  EXPECT_NE(hint.find(" -data " + fdata), std::string::npos) << hint;
}

TEST_F(ExportHintTest, SearchPrefersWhatAggregatesAndNeverPerf2boltWithASuffix) {
  const fs::path path = dir_ / "bin", llvm = dir_ / "lib";
  const std::vector<std::string> dirs = {path.string()};
  // Nothing at all: what to install.
  pathctl::ToolCommand c = pathctl::Perf2BoltCommand("a.data", "a.fdata", "prog", dirs, llvm);
  EXPECT_FALSE(c.found);
  EXPECT_NE(c.command.find("bolt-15"), std::string::npos) << c.command;
  // Debian's layout: perf2bolt-15 and llvm-bolt-15 on PATH, the real names in llvm-N/bin.
  Executable(path / "perf2bolt-15");
  Executable(path / "llvm-bolt-15");
  c = pathctl::Perf2BoltCommand("a.data", "a.fdata", "prog", dirs, llvm);
  EXPECT_TRUE(c.found);
  EXPECT_EQ(c.command, "llvm-bolt-15 prog -aggregate-only -p a.data -o a.fdata");
  Executable(llvm / "llvm-14/bin/perf2bolt");
  Executable(llvm / "llvm-15/bin/perf2bolt");
  c = pathctl::Perf2BoltCommand("a.data", "a.fdata", "my prog", dirs, llvm);
  EXPECT_EQ(c.command,
            (llvm / "llvm-15/bin/perf2bolt").string() + " -p a.data -o a.fdata 'my prog'");
  // A perf2bolt on PATH is what its user chose.
  Executable(path / "perf2bolt");
  c = pathctl::Perf2BoltCommand("a.data", "a.fdata", "prog", dirs, llvm);
  EXPECT_EQ(c.command, "perf2bolt -p a.data -o a.fdata prog");
  // llvm-bolt: the newest versioned name on PATH, else the newest LLVM directory's.
  Executable(path / "llvm-bolt-9");
  EXPECT_EQ(pathctl::FindLlvmBolt(dirs, llvm), "llvm-bolt-15");
  EXPECT_EQ(pathctl::FindLlvmBolt({}, llvm), "");
  Executable(llvm / "llvm-16/bin/llvm-bolt");
  EXPECT_EQ(pathctl::FindLlvmBolt({}, llvm), (llvm / "llvm-16/bin/llvm-bolt").string());
}

}  // namespace
