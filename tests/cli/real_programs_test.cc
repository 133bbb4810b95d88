// `pathctl run` on programs nobody here wrote: Debian 12's own xz and gzip (-O2, no frame
// pointers, stripped) and a shell or make running them. Stacks must reach main through DWARF
// CFI, and with --inherit a command's children must be profiled. Needs root for eBPF; skips with
// the reason otherwise, and where a Debian program is missing.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/v1/reports.pb.h"

#include "common/run_command.h"
#include "common/run_report.h"

namespace {

using CmdResult = pathprof::testing::CommandResult;
using pathprof::testing::ShareUnder;
namespace fs = std::filesystem;

CmdResult Pathctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args +
                                       " 2>/dev/null");
}

// The pids in the report's accounting with at least one stack sample.
std::set<long> PidsWithStacks(const std::string& json) {
  std::set<long> pids;
  const pathprof::v1::RunReport report =
      pathprof::testing::ParseRunReport(json);  // (alive for the loop)
  for (const auto& t : report.stats())
    if (t.stack_samples() > 0) pids.insert(t.pid());
  return pids;
}

// Whether some process of the report has a pid of its own in a pid namespace.
bool AnyNamespacePid(const std::string& json) {
  const pathprof::v1::RunReport report = pathprof::testing::ParseRunReport(json);
  for (const auto& t : report.stats())
    if (t.namespace_pid() != 0) return true;
  return false;
}

class RealProgramsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto caps = pathprof::collectors::ProbeHostCapabilities();
    if (!caps.ebpf.available) GTEST_SKIP() << "no eBPF stacks here: " << caps.ebpf.detail;
    dir_ = fs::temp_directory_path() / ("pathprof-real-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    // Compressible but not trivial input: text with some entropy, about 3 MB (xz -6 takes a
    // second or two on it: hundreds of samples at 499 Hz, where the shares below need tens;
    // these tests run alone, so each second is the suite's wall time).
    std::ofstream out(dir_ / "input.txt");
    uint64_t x = 88172645463325252ull;
    for (int line = 0; line < 60000; ++line) {
      for (int w = 0; w < 8; ++w) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out << "word" << (x % 5000) << ' ';
      }
      out << '\n';
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static void NeedProgram(const std::string& path) {
    if (access(path.c_str(), X_OK) != 0) GTEST_SKIP() << path << " is not installed";
  }
  fs::path dir_;
};

TEST_F(RealProgramsTest, XzStacksReachMainWithoutFramePointers) {
  NeedProgram("/usr/bin/xz");
  const std::string in = (dir_ / "input.txt").string();
  const CmdResult r =
      Pathctl("run --json --source none --stack-hz 499 -- /usr/bin/xz -6 -T1 -k -f " + in);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  // _start -> __libc_start_main -> __libc_start_call_main -> main: every sample of the
  // single-threaded xz is under main's caller when its stack was walked to the end.
  const double share = ShareUnder(r.out, "__libc_start_call_main");
  EXPECT_GE(share, 0.95) << r.out.substr(r.out.find("\"stats\""), 800);
}

TEST_F(RealProgramsTest, FramePointersAloneDoNotReachMainInXz) {
  // The reason for the DWARF walk: Debian's xz has no frame pointers.
  NeedProgram("/usr/bin/xz");
  const std::string in = (dir_ / "input.txt").string();
  const CmdResult r = Pathctl("run --json --source none --stack-hz 499 --call-graph fp -- " +
                              std::string("/usr/bin/xz -6 -T1 -k -f ") + in);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  EXPECT_LT(ShareUnder(r.out, "__libc_start_call_main"), 0.5);
}

TEST_F(RealProgramsTest, GzipStacksReachMainWithoutFramePointers) {
  NeedProgram("/usr/bin/gzip");
  const std::string in = (dir_ / "input.txt").string();
  const CmdResult r =
      Pathctl("run --json --source none --stack-hz 499 -- /usr/bin/gzip -9 -k -f " + in);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  const double share = ShareUnder(r.out, "__libc_start_call_main");
  EXPECT_GE(share, 0.95) << r.out.substr(r.out.find("\"stats\""), 800);
}

// The JSON report owns standard output: sqlite3's rows go to standard error, so the output
// parses as one report (sqlite3's rows stood before the JSON).
TEST_F(RealProgramsTest, JsonReportIsNotMixedWithTheCommandsOutput) {
  NeedProgram("/usr/bin/sqlite3");
  const CmdResult r = pathprof::testing::RunCommand(
      std::string(PATHPROF_BIN_DIR) + "/pathctl run --json --source none -- /usr/bin/sqlite3 " +
      ":memory: 'select 4321 * 1000;' 2>" + (dir_ / "stderr").string());
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  pathprof::v1::RunReport report;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &report).ok())
      << r.out.substr(0, 600);
  EXPECT_EQ(report.exit_status(), 0);
  EXPECT_EQ(r.out.find("4321000"), std::string::npos);
  std::ifstream err(dir_ / "stderr");
  const std::string stderr_text((std::istreambuf_iterator<char>(err)), {});
  EXPECT_NE(stderr_text.find("4321000"), std::string::npos) << stderr_text;
}

TEST_F(RealProgramsTest, ShellChildrenAreProfiled) {
  NeedProgram("/usr/bin/xz");
  const std::string in = (dir_ / "input.txt").string();
  // "; true" keeps sh from exec'ing xz in its own process: xz is a child.
  const CmdResult r = Pathctl(
      "run --json --source none --stack-hz 499 --inherit -- sh -c '/usr/bin/xz -6 -T1 -k -f " + in +
      "; true'");
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  const std::set<long> pids = PidsWithStacks(r.out);
  EXPECT_GE(pids.size(), 1u);
  // The leader (sh) waits; the samples are xz's, which runs liblzma and reaches main.
  EXPECT_NE(r.out.find("liblzma"), std::string::npos) << r.out.substr(0, 1500);
  EXPECT_GE(ShareUnder(r.out, "__libc_start_call_main"), 0.9);
  const CmdResult alone = Pathctl(
      "run --json --source none --stack-hz 499 --no-inherit -- sh -c '/usr/bin/xz -6 -T1 -k -f " +
      in + "; true'");
  ASSERT_EQ(alone.rc, 0);
  EXPECT_EQ(alone.out.find("liblzma"), std::string::npos) << "--no-inherit followed xz";
}

TEST_F(RealProgramsTest, MakeJobsAreProfiled) {
  NeedProgram("/usr/bin/make");
  NeedProgram("/usr/bin/xz");
  NeedProgram("/usr/bin/gzip");
  std::ofstream mk(dir_ / "Makefile");
  mk << "all: input.txt.xz input.txt.gz\n"
        "input.txt.xz: input.txt\n\t/usr/bin/xz -6 -T1 -k -f input.txt\n"
        "input.txt.gz: input.txt\n\t/usr/bin/gzip -9 -k -f input.txt\n";
  mk.close();
  const CmdResult r =
      Pathctl("run --json --source none --stack-hz 499 --inherit -- /usr/bin/make -s -j2 -B -C " +
              dir_.string());
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  // make, and the two recipes' compressors (each possibly under a shell): at least xz and gzip.
  EXPECT_GE(PidsWithStacks(r.out).size(), 2u) << r.out.substr(r.out.find("\"stats\""), 1200);
  EXPECT_NE(r.out.find("liblzma"), std::string::npos);
  EXPECT_NE(r.out.find("\"image\":\"/usr/bin/gzip\""), std::string::npos);
}

TEST_F(RealProgramsTest, ProcessInItsOwnPidAndMountNamespaceIsNamed) {
  NeedProgram("/usr/bin/unshare");
  NeedProgram("/usr/bin/xz");
  // A container runtime may refuse new namespaces or mounts (no CAP_SYS_ADMIN, seccomp).
  if (pathprof::testing::RunCommand("/usr/bin/unshare --fork --pid --mount-proc sh -c 'mount -t "
                                    "tmpfs none /mnt' 2>&1")
          .rc != 0)
    GTEST_SKIP() << "this host does not let root make pid and mount namespaces with a tmpfs";
  // The binary exists only inside the new mount namespace (a private tmpfs), as in a container
  // image; it runs as a child of the namespace's init, with its own small pid.
  const fs::path inside = dir_ / "inside";
  fs::create_directories(inside);
  const std::string in = (dir_ / "input.txt").string();
  const std::string bin = (inside / "xz-inside").string();
  const std::string script = "mount -t tmpfs none " + inside.string() + " && cp /usr/bin/xz " +
                             bin + " && " + bin + " -6 -T1 -k -f " + in + "; true";
  const CmdResult r = Pathctl(
      "run --json --source none --stack-hz 499 --inherit -- /usr/bin/unshare --fork --pid "
      "--mount-proc "
      "sh -c '" +
      script + "'");
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  EXPECT_FALSE(fs::exists(bin)) << "the test meant the binary to be invisible from here";
  // Its frames are read through /proc/PID/root: named by the path it has inside, symbolized
  // (liblzma's exported lzma_code), and walked to main.
  EXPECT_NE(r.out.find("\"image\":\"" + bin + "\""), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("\"function\":\"lzma_code\""), std::string::npos);
  EXPECT_GE(ShareUnder(r.out, "__libc_start_call_main"), 0.9);
  // Host pids, with the pid inside the namespace beside them.
  EXPECT_TRUE(AnyNamespacePid(r.out)) << r.out.substr(r.out.find("\"stats\""), 800);
}

}  // namespace
