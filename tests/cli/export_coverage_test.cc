// `pathctl export` of a recording says how much of the binary the profile covers (the share of
// its branches, each counted as often as it ran, in functions the binary names, and how many of
// those functions it reaches) and warns when the profile is thin for the binary: real exports
// of exact traces and of ptrace-burst windows of the example programs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "common/run_command.h"
#include "pathprof/core/pbs.h"

namespace {

namespace fs = std::filesystem;
const std::string kBin = PATHPROF_BIN_DIR;

pathprof::testing::CommandResult Shell(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd);
}

struct Coverage {
  bool found = false;
  long long in_binary = 0, branches = 0, reached = 0, functions = 0;
  double named_percent = 0;
};

// The numbers of the export's coverage line.
Coverage Parse(const std::string& out) {
  static const std::regex line(
      R"(coverage: (\d+) of the recording's (\d+) branches are in \S+ \([0-9.]+%\); ([0-9.]+)% of )"
      R"(those lie in functions it names; the profile reaches (\d+) of its (\d+) named functions)");
  std::smatch m;
  Coverage c;
  if (!std::regex_search(out, m, line)) return c;
  c.found = true;
  c.in_binary = std::atoll(m[1].str().c_str());
  c.branches = std::atoll(m[2].str().c_str());
  c.named_percent = std::atof(m[3].str().c_str());
  c.reached = std::atoll(m[4].str().c_str());
  c.functions = std::atoll(m[5].str().c_str());
  return c;
}

class ExportCoverageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "recording needs ptrace (root here)";
    dir_ = fs::temp_directory_path() / ("pathprof-coverage-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (target_ > 0) {
      kill(target_, SIGKILL);
      waitpid(target_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Trace(const std::string& program, const std::string& args) {
    const std::string pbs = (dir_ / (program + ".pbs")).string();
    const auto t = Shell(kBin + "/pathctl trace --exact -o " + pbs + " -- " + kBin + "/" + program +
                         " " + args + " 2>&1");
    EXPECT_EQ(t.rc, 0) << t.out;
    return pbs;
  }
  pathprof::testing::CommandResult Export(const std::string& pbs, const std::string& flags) {
    return Shell(kBin + "/pathctl export " + pbs + " -o " + (dir_ / "out").string() + " " + flags +
                 " 2>&1");
  }
  fs::path dir_;
  pid_t target_ = -1;
};

TEST_F(ExportCoverageTest, AnExactTraceOfTheWholeRunCoversItsBinary) {
  const std::string pbs = Trace("example_hotloop_relocs", "3");
  for (const std::string format : {"bolt", "perf-lbr"}) {
    const auto e = Export(pbs, "--format " + format);
    ASSERT_EQ(e.rc, 0) << e.out;
    const Coverage c = Parse(e.out);
    ASSERT_TRUE(c.found) << e.out;
    // Three rounds of hot() (2000 iterations, each retiring its if and its back edge) and
    // warm() (500, a back edge each), and the start-up code: every one in a named function.
    EXPECT_GT(c.in_binary, 3 * (2 * 2000 + 500));
    EXPECT_LT(c.in_binary, c.branches);  // the loader's and libc's are the rest
    EXPECT_EQ(c.named_percent, 100.0);
    EXPECT_GE(c.reached, 3);
    EXPECT_LE(c.reached, c.functions);
    EXPECT_EQ(e.out.find("warning: thin profile"), std::string::npos) << e.out;
  }
}

TEST_F(ExportCoverageTest, AProgramsProfileIsThinForTheLibraryItBarelyUses) {
  // example_loop reaches a few dozen of libc's thousands of functions: a profile of libc from
  // it leaves nearly all of libc without counts.
  const std::string pbs = Trace("example_loop", "100");
  auto recording = pathprof::ReadPbsFile(pbs);
  ASSERT_TRUE(recording.ok()) << recording.status().ToString();
  std::string libc;
  for (const pathprof::ImageRecord& image : recording->images)
    if (fs::path(image.path).filename() == "libc.so.6") libc = image.path;
  ASSERT_FALSE(libc.empty());
  const auto e = Export(pbs, "--format bolt --binary " + libc);
  ASSERT_EQ(e.rc, 0) << e.out;
  const Coverage c = Parse(e.out);
  ASSERT_TRUE(c.found) << e.out;
  EXPECT_GT(c.functions, 1000);
  EXPECT_GT(c.reached, 0);
  EXPECT_LT(c.reached * 10, c.functions);
  EXPECT_NE(e.out.find("warning: thin profile: the profile reaches " + std::to_string(c.reached) +
                       " of the " + std::to_string(c.functions) + " functions"),
            std::string::npos)
      << e.out;
}

TEST_F(ExportCoverageTest, AFewHundredWindowsAreThin) {
  target_ = fork();
  if (target_ == 0) {
    const std::string program = kBin + "/example_hotloop_relocs";
    execl(program.c_str(), program.c_str(), "0", nullptr);
    _exit(127);
  }
  const std::string pbs = (dir_ / "windows.pbs").string();
  const auto b = Shell(kBin + "/pathctl bursts -p " + std::to_string(target_) +
                       " --duration 300ms -o " + pbs + " --top 0 2>&1");
  ASSERT_TRUE(b.rc == 0 || b.rc == 3) << b.out;
  if (b.rc == 3) GTEST_SKIP() << "no window in 300 ms on this host: " << b.out;
  const auto e = Export(pbs, "--format bolt");
  ASSERT_EQ(e.rc, 0) << e.out;
  ASSERT_TRUE(Parse(e.out).found) << e.out;
  EXPECT_NE(e.out.find("sampled windows (under 1000)"), std::string::npos) << e.out;
}

}  // namespace
