// `pathctl trace --exact` ended by SIGTERM or Ctrl-C (SIGINT) in the middle of a long trace:
// it exits 0 having written what it traced as a complete .pbs (that analyze reads, with the
// branches and an `interrupted` note), and the program it started is killed and reaped, not
// left stopped, running or a zombie. `pathctl run` ended so prints its report of what it
// collected and then ends by the signal, as perf record does. This test makes itself the
// subreaper of what it starts, so a program pathctl left behind would become its child and be
// seen here.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/procfs.h"
#include "pathprof/v1/reports.pb.h"

namespace {

namespace fs = std::filesystem;
const std::string kBin = PATHPROF_BIN_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A field of /proc/PID/status ("" when the process is gone).
std::string StatusField(pid_t pid, const std::string& key) {
  auto text = pathprof::procfs::Procfs::Host().Read(pid, "status");
  if (!text.ok()) return "";
  const auto value = pathprof::procfs::StatusField(*text, key);
  return value ? std::string(*value) : "";
}

// The children of `pid` (its first thread's), from /proc.
std::vector<pid_t> Children(pid_t pid) {
  auto children = pathprof::procfs::Procfs::Host().ReadTask(pid, pid, "children");
  std::istringstream in(children.ok() ? *children : "");
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

class TraceInterruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "tracing needs ptrace (root here)";
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    dir_ = fs::temp_directory_path() / ("pathprof-trace-int-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    // Whatever is left (only after a failure): ended by pid, then reaped.
    for (pid_t p : {traced_, pathctl_})
      if (p > 0 && waitpid(p, nullptr, WNOHANG) == 0) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
      }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Starts `pathctl trace --exact` of a program that runs until killed; returns once the
  // program has been stopped by its tracer a few thousand times (its context switches: each
  // ptrace stop is one), so that the trace holds branches by then.
  void StartLongTrace(const std::string& step_mode) {
    pbs_ = (dir_ / "trace.pbs").string();
    err_ = (dir_ / "stderr").string();
    pathctl_ = fork();
    ASSERT_GE(pathctl_, 0);
    if (pathctl_ == 0) {
      const int fd = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      const std::string pathctl = kBin + "/pathctl", program = kBin + "/example_hotloop_static";
      execl(pathctl.c_str(), pathctl.c_str(), "trace", "--exact", "--step-mode", step_mode.c_str(),
            "-o", pbs_.c_str(), "--", program.c_str(), "0", nullptr);
      _exit(127);
    }
    for (;;) {
      ASSERT_EQ(waitpid(pathctl_, nullptr, WNOHANG), 0)
          << "pathctl ended early: " << ReadFile(err_);
      const std::vector<pid_t> children = Children(pathctl_);
      if (!children.empty() && StatusField(children[0], "TracerPid") == std::to_string(pathctl_) &&
          std::atol(StatusField(children[0], "voluntary_ctxt_switches").c_str()) > 3000) {
        traced_ = children[0];
        return;
      }
      usleep(20000);
    }
  }

  // Sends `sig` to pathctl and waits for it; its exit status.
  int Interrupt(int sig) {
    EXPECT_EQ(kill(pathctl_, sig), 0);
    int st = 0;
    EXPECT_EQ(waitpid(pathctl_, &st, 0), pathctl_);
    pathctl_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  // The traced program is gone for good: not running, not stopped, not a zombie (reaped by
  // pathctl; had pathctl left it, it would now be this test's child and still in /proc).
  void ExpectProgramReaped() {
    EXPECT_FALSE(fs::exists(pathprof::procfs::Procfs::Host().Path(traced_, "")))
        << "the traced program " << traced_ << " is still there, state "
        << StatusField(traced_, "State");
  }

  // The .pbs is whole: it parses, holds the branches traced, and says the run was cut short.
  void ExpectUsableRecording() {
    auto pbs = pathprof::ReadPbsFile(pbs_);
    ASSERT_TRUE(pbs.ok()) << pbs.status().ToString();
    size_t events = 0;
    for (const pathprof::BranchBatch& b : pbs->batches) events += b.events.size();
    EXPECT_GT(events, 100u);  // 3000 stops: ~750 branches single-stepped, more in blocks
    bool interrupted = false;
    std::string exit_status;
    for (const pathprof::MetaRecord& m : pbs->meta) {
      interrupted |= m.key == "interrupted";
      if (m.key == "exit_status") exit_status = m.value;
    }
    EXPECT_TRUE(interrupted);
    EXPECT_EQ(exit_status, "137");  // killed (SIGKILL) by pathctl
    const auto analyze = pathprof::testing::RunCommand(kBin + "/pathctl analyze " + pbs_ +
                                                       " --decode-only --json 2>&1");
    EXPECT_EQ(analyze.rc, 0) << analyze.out;
    EXPECT_NE(analyze.out.find("\"events\""), std::string::npos) << analyze.out;
  }

  fs::path dir_;
  std::string pbs_, err_;
  pid_t pathctl_ = -1, traced_ = -1;
};

TEST_F(TraceInterruptTest, SigtermWritesTheTraceAndReapsTheProgram) {
  StartLongTrace("auto");
  EXPECT_EQ(Interrupt(SIGTERM), 0) << ReadFile(err_);
  EXPECT_NE(ReadFile(err_).find("interrupted by SIGTERM"), std::string::npos) << ReadFile(err_);
  ExpectProgramReaped();
  ExpectUsableRecording();
}

TEST_F(TraceInterruptTest, CtrlCWritesTheTraceAndReapsTheProgramSingleStepped) {
  StartLongTrace("step");
  EXPECT_EQ(Interrupt(SIGINT), 0) << ReadFile(err_);
  EXPECT_NE(ReadFile(err_).find("interrupted by SIGINT"), std::string::npos) << ReadFile(err_);
  ExpectProgramReaped();
  ExpectUsableRecording();
}

// `pathctl run -- CMD` of a program that runs until killed, interrupted once it has profiled it
// for a second: the report is printed whole, then pathctl ends by the signal (128 + signal for
// the shell), and the command it started is ended and reaped.
class RunInterruptTest : public TraceInterruptTest {
 protected:
  // Starts the run and returns once pathctl says it profiles the command, and a second more.
  void StartRun(const std::vector<std::string>& flags) {
    out_ = (dir_ / "stdout").string();
    err_ = (dir_ / "stderr").string();
    pathctl_ = fork();
    ASSERT_GE(pathctl_, 0);
    if (pathctl_ == 0) {
      dup2(open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      dup2(open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      std::vector<std::string> argv = {kBin + "/pathctl", "run"};
      argv.insert(argv.end(), flags.begin(), flags.end());
      for (const char* a : {"--", "example_hotloop", "0"}) argv.push_back(a);
      argv[argv.size() - 2] = kBin + "/example_hotloop";
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    for (int i = 0; i < 600 && traced_ <= 0; ++i) {
      ASSERT_EQ(waitpid(pathctl_, nullptr, WNOHANG), 0) << "pathctl ended: " << ReadFile(err_);
      const std::string err = ReadFile(err_);
      const size_t at = err.find("profiling pid ");
      if (at != std::string::npos) traced_ = std::atoi(err.c_str() + at + 14);
      usleep(50000);
    }
    ASSERT_GT(traced_, 0) << ReadFile(err_);
    sleep(1);
  }
  std::string out_;
};

TEST_F(RunInterruptTest, CtrlCPrintsTheReportThenEndsBySigint) {
  StartRun({"--json", "--source", "none", "-F", "499"});
  EXPECT_EQ(Interrupt(SIGINT), 128 + SIGINT) << ReadFile(err_);
  ExpectProgramReaped();
  pathprof::v1::RunReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFile(out_), &report).ok())
      << ReadFile(out_).substr(0, 400) << ReadFile(err_);
  EXPECT_EQ(report.exit_status(), 128 + SIGTERM);  // the command, ended by pathctl
  ASSERT_GT(report.hot_methods().methods_size(), 0) << ReadFile(out_).substr(0, 400);
  bool hot = false;
  for (const auto& m : report.hot_methods().methods()) hot |= m.function().function() == "hot";
  EXPECT_TRUE(hot) << ReadFile(out_).substr(0, 1000);
}

TEST_F(RunInterruptTest, SigtermPrintsTheTextReportThenEndsBySigterm) {
  StartRun({"--source", "none", "-F", "499"});
  EXPECT_EQ(Interrupt(SIGTERM), 128 + SIGTERM) << ReadFile(err_);
  ExpectProgramReaped();
  EXPECT_NE(ReadFile(out_).find(" hot"), std::string::npos) << ReadFile(out_);
}

}  // namespace
