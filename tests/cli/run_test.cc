// Runs `pathctl run` on the bundled hot-loop example as a user would and checks its JSON report
// (protobuf's JSON mapping of pathprof.v1.RunReport, parsed back here as any consumer would):
// the hottest method and the hottest path are in the example's known hot loops, symbolized to
// hotloop.c. Needs root for eBPF and ptrace; skips with the reason otherwise.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/v1/reports.pb.h"

#include "common/run_command.h"

namespace {

using CmdResult = pathprof::testing::CommandResult;

CmdResult Pathctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args +
                                       " 2>/dev/null");
}

namespace v1 = pathprof::v1;

// The report on stdout, parsed strictly (an unknown field fails, as a drifted schema would).
::testing::AssertionResult ParseReport(const CmdResult& r, v1::RunReport* report) {
  const auto status = google::protobuf::util::JsonStringToMessage(r.out, report);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.ToString() << ": " << r.out.substr(0, 600);
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto caps = pathprof::collectors::ProbeHostCapabilities();
    if (!caps.ebpf.available) GTEST_SKIP() << "no eBPF stacks here: " << caps.ebpf.detail;
    if (!caps.ptrace.available) GTEST_SKIP() << "no ptrace here: " << caps.ptrace.detail;
  }
  const std::string example_ = std::string(PATHPROF_BIN_DIR) + "/example_hotloop";
};

TEST_F(RunTest, ReportsTheExampleHotLoop) {
  const CmdResult r =
      Pathctl("run --json --duration 4 --stack-hz 199 --burst-rate 50 --top 5 -- " + example_);
  ASSERT_EQ(r.rc, 0) << r.out;
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(r, &report));
  EXPECT_EQ(report.session().state(), v1::SESSION_STATE_STOPPED);
  EXPECT_EQ(report.session().source(), v1::BRANCH_SOURCE_PTRACE);
  EXPECT_EQ(report.session().name(), "");  // pathctl's own session: not a daemon resource
  // hot() does 4x the iterations of warm(): it is the hottest method by stack samples.
  ASSERT_GT(report.hot_methods().methods_size(), 0) << r.out.substr(0, 600);
  EXPECT_EQ(report.hot_methods().methods(0).function().function(), "hot");
  EXPECT_NE(report.hot_methods().methods(0).function().file().find("hotloop.c"), std::string::npos);
  // The hottest path starts in one of the two loops, at a line of hotloop.c.
  ASSERT_GT(report.hot_paths().paths_size(), 0) << "no hot paths: " << r.out.substr(0, 600);
  const v1::Location& start = report.hot_paths().paths(0).start();
  EXPECT_TRUE(start.function() == "hot" || start.function() == "warm") << start.function();
  EXPECT_NE(start.file().find("hotloop.c"), std::string::npos);
  // hot() is in the calling context tree.
  bool hot_in_tree = false;
  for (const v1::CctNode& n : report.cct().nodes()) hot_in_tree |= n.function().function() == "hot";
  EXPECT_TRUE(hot_in_tree);
}

// Two processes in one report (a shell's two children under --inherit, each ~2 s, so that both
// are alive when their first samples are read): every row names its
// process by pid and comm, and each table's shares have one basis, every process's together,
// as the tree's do: the self shares of all methods sum to 1 (per process they summed to one
// each: 2-3 over the shell and its children).
TEST_F(RunTest, TwoProcessesShareOneBasisAndAreNamed) {
  const std::string bin = PATHPROF_BIN_DIR;
  const CmdResult r =
      Pathctl("run --json --source none --freq 499 --inherit --top 1000 -- sh -c '" + bin +
              "/example_hotloop 1500000 & " + bin + "/example_loop_static 6000000000; wait'");
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(r, &report));
  std::map<int32_t, std::string> comm_of;
  double self_shares = 0;
  for (const v1::HotMethod& m : report.hot_methods().methods()) {
    EXPECT_FALSE(m.comm().empty()) << "pid " << m.pid();
    comm_of[m.pid()] = m.comm();
    self_shares += m.self().share();
  }
  std::set<std::string> comms;
  for (const auto& [pid, comm] : comm_of) comms.insert(comm);
  EXPECT_TRUE(comms.contains("example_hotloop")) << r.out.substr(0, 2000);
  EXPECT_TRUE(comms.contains("example_loop_st")) << r.out.substr(0, 2000);  // comm: 15 bytes
  EXPECT_NEAR(self_shares, 1.0, 1e-6) << r.out.substr(0, 2000);
  // The text report prints the comm column and says the basis.
  const CmdResult text =
      Pathctl("run --source none --freq 499 --inherit --top 1000 -- sh -c '" + bin +
              "/example_hotloop 1500000 & " + bin + "/example_loop_static 6000000000; wait'");
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find(" example_hotloop "), std::string::npos) << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("processes together"), std::string::npos) << text.out.substr(0, 3000);
}

// `run -- sh -c 'PROGRAM; true'` (the `; true` keeps sh from exec'ing it): the work is in sh's
// child, which is followed without any flag, as perf record follows children; the text report
// says that sh itself did next to none of it. With --no-inherit the child is not profiled and the
// report says how to follow it.
TEST_F(RunTest, ACommandsChildrenAreFollowedByDefaultAndAnIdleTargetIsSaidToBe) {
  const std::string forks = "-- sh -c '" + example_ + " 400000; true'";
  const CmdResult r = Pathctl("run --json --source none --freq 199 --top 5 " + forks);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(r, &report));
  ASSERT_EQ(report.session().pids_size(), 1);
  EXPECT_TRUE(report.session().settings().follow_children());
  int64_t child_samples = 0;
  for (const v1::TargetStats& t : report.stats())
    if (t.pid() != report.session().pids(0)) child_samples += t.stack_samples();
  EXPECT_GT(child_samples, 0) << r.out.substr(0, 2000);
  ASSERT_GT(report.hot_methods().methods_size(), 0) << r.out.substr(0, 2000);
  EXPECT_EQ(report.hot_methods().methods(0).comm(), "example_hotloop");

  const CmdResult text = Pathctl("run --source none --freq 199 --top 5 " + forks);
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("did next to no work itself"), std::string::npos)
      << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("the processes it forked did the rest"), std::string::npos)
      << text.out.substr(0, 3000);

  const CmdResult alone = Pathctl("run --source none --freq 199 --top 5 --no-inherit " + forks);
  ASSERT_EQ(alone.rc, 0);
  EXPECT_EQ(alone.out.find(" example_hotloop "), std::string::npos) << alone.out.substr(0, 3000);
  EXPECT_EQ(alone.out.find("the processes it forked did the rest"), std::string::npos);
}

// The raw windows kept for `pathctl export --format bolt|perf-lbr` are a bounded buffer (65536
// branches a process): the windows it lets go are said as retention on a line of their own,
// not listed among the DROPS, which are losses from the profile shown.
TEST_F(RunTest, TheExportBufferIsRetentionNotADrop) {
  const CmdResult r =
      Pathctl("run --source ptrace -F 0 --burst-rate 1000 --duration 3 -- " + example_);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  EXPECT_EQ(r.out.find("export_window_evicted"), std::string::npos) << r.out;
  const size_t line = r.out.find("export buffer (pathctl export --format bolt|perf-lbr): kept ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::string said = r.out.substr(line, r.out.find('\n', line) - line);
  EXPECT_NE(said.find(" newest windows, "), std::string::npos) << said;
  EXPECT_NE(said.find(" older let go"), std::string::npos) << said;
}

// Every hot call pair is named on both sides. Before its exec the held command runs pathctl's
// own code (its read of the go byte, execve in its libc), whose image the exec replaced: those
// windows' pairs read as bare addresses ("0x7f23a48b6f5a -> 0x7f23a48b4120") on top of the
// command's. As perf record's enable_on_exec, the profile starts at the exec.
TEST_F(RunTest, EveryHotCallPairIsNamed) {
  for (int i = 0; i < 3; ++i) {
    // Three seconds of the endless hot loop: a run of under a second can end before the
    // tracer's first window on a loaded 2-core host (a sanitizer build starts slowly).
    const CmdResult r = Pathctl(
        "run --json --source ptrace --burst-rate 1000 -F 99 --top 50 --duration 3 -- " + example_);
    ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
    v1::RunReport report;
    ASSERT_TRUE(ParseReport(r, &report));
    ASSERT_GT(report.hot_call_pairs().pairs_size(), 0) << r.out.substr(0, 2000);
    for (const v1::CallPair& p : report.hot_call_pairs().pairs()) {
      for (const v1::Location* l : {&p.call_site(), &p.target()})
        EXPECT_FALSE(l->function().empty() && l->image().empty())
            << "0x" << std::hex << p.call_site().address() << " -> 0x" << p.target().address()
            << " is nowhere";
    }
  }
}

// The stack sampler starts before the branch source's tracer: started first, the tracer burst
// through the sampler's load while the command was still held before its exec, and every
// burst found no thread to take (55-101 skipped in each held run, against 0-2 before).
TEST_F(RunTest, AHeldCommandsTracerStartsAfterTheStackSampler) {
  const CmdResult r =
      Pathctl("run --json --source ptrace --burst-rate 500 --duration 2 -- " + example_);
  ASSERT_EQ(r.rc, 0) << r.out.substr(0, 600);
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(r, &report));
  ASSERT_GT(report.stats_size(), 0) << r.out.substr(0, 600);
  int64_t skipped = 0;
  for (const v1::TargetStats& t : report.stats())
    for (const v1::DropCount& d : t.drops())
      if (d.reason() == "burst_skipped_no_thread") skipped += d.count();
  EXPECT_LE(skipped, 10) << "bursts that found the held command stopped";
  EXPECT_GT(report.stats(0).windows(), 0);
}

// A low window rate says why: bursts put off because the target's stopped-time budget for the
// last second was spent are the rate's bound, shown beside the windows, not among the drops.
TEST_F(RunTest, WindowsHeldBackByTheStoppedTimeCapAreSaidNotDropped) {
  const std::string args =
      "--source ptrace -F 0 --burst-rate 1000 --max-stopped 0.002 --duration 2 -- " + example_;
  const CmdResult json = Pathctl("run --json " + args);
  ASSERT_EQ(json.rc, 0) << json.out.substr(0, 600);
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(json, &report));
  ASSERT_GT(report.stats_size(), 0);
  int64_t held = 0;
  for (const v1::DropCount& h : report.stats(0).windows_held_back())
    if (h.reason() == "stopped_time_cap") held = h.count();
  EXPECT_GT(held, 0) << "a 0.2% cap at 1000 bursts a second puts bursts off";
  for (const v1::DropCount& d : report.stats(0).drops())
    EXPECT_EQ(d.reason().find("cap"), std::string::npos) << d.reason() << " among the drops";
  const CmdResult text = Pathctl("run " + args);
  ASSERT_EQ(text.rc, 0) << text.out.substr(0, 600);
  EXPECT_NE(text.out.find("windows held back (the rate's bounds, not losses): stopped_time_cap="),
            std::string::npos)
      << text.out;
}

TEST_F(RunTest, ACommandThatExitsEndsTheSessionWithItsStatus) {
  const CmdResult r = Pathctl("run --json --top 3 -- " + example_ + " 20000");
  ASSERT_EQ(r.rc, 0) << r.out;
  v1::RunReport report;
  ASSERT_TRUE(ParseReport(r, &report));
  EXPECT_EQ(report.session().state(), v1::SESSION_STATE_TARGET_EXITED);
  EXPECT_EQ(report.exit_status(), 0);
}

// A command that exits within microseconds is still profiled from its start: the child is held
// before its exec until the session is attached (as perf record holds its workload). Before,
// the session met a process already gone ("does not exist", exit 1) or a zombie (exit 0 with a
// ptrace reason blaming permissions), depending on the race.
TEST_F(RunTest, ACommandThatExitsAtOnceIsProfiledNotRacedWith) {
  for (int i = 0; i < 5; ++i) {
    const CmdResult r = Pathctl("run --source ptrace --json --top 1 -- /bin/sh -c 'exit 3'");
    ASSERT_EQ(r.rc, 0) << r.out;
    v1::RunReport report;
    ASSERT_TRUE(ParseReport(r, &report));
    EXPECT_EQ(report.session().state(), v1::SESSION_STATE_TARGET_EXITED);
    EXPECT_EQ(report.exit_status(), 3);
    EXPECT_EQ(report.session().source(), v1::BRANCH_SOURCE_PTRACE);
    EXPECT_EQ(report.session().source_reason().find("EPERM"), std::string::npos)
        << report.session().source_reason();
    ASSERT_EQ(report.stats_size(), 1);
    EXPECT_EQ(report.stats(0).pid(), report.session().pids(0));
  }
}

// --duration D returns within D + 2 s whatever the command does: here it ignores SIGTERM (it
// gets SIGKILL half a second later) and the tracer steps it the whole time.
TEST_F(RunTest, DurationBoundsTheRunEvenForACommandThatIgnoresSigterm) {
  // Against the same run of a command that does end on SIGTERM, in the same conditions: what
  // pathctl itself takes to start and report (about 0.8 s idle under the sanitizer, 2 s more on
  // a loaded 2-core host) cancels out, and the one difference allowed is the 0.5 s SIGKILL
  // grace, plus 1 s of noise.
  auto timed = [this](const std::string& command, CmdResult* r) {
    const auto t0 = std::chrono::steady_clock::now();
    *r = Pathctl("run --json --duration 2 --top 3 -- /bin/sh -c '" + command + "'");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  CmdResult polite, r;
  const double baseline = timed("while :; do :; done", &polite);
  ASSERT_EQ(polite.rc, 0) << polite.out;
  const double took = timed("trap \"\" TERM; while :; do :; done", &r);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_LT(took, baseline + 0.5 + 1.0) << "pathctl run --duration 2 took " << took << " s; "
                                        << baseline << " s for a command that ends on SIGTERM";
  EXPECT_NE(r.out.find("\"exit_status\":" + std::to_string(128 + SIGKILL)), std::string::npos)
      << r.out.substr(0, 400);
}

TEST_F(RunTest, BadUsageAndMissingCommandsAreClearErrors) {
  EXPECT_EQ(Pathctl("run --json").rc, 2);
  EXPECT_EQ(Pathctl("run --source perf -- /bin/true").rc, 2);
  const CmdResult missing = Pathctl("run -- /nonexistent/program");
  EXPECT_EQ(missing.rc, 1);
}

// Not a RunTest: it needs neither eBPF nor ptrace, only a host without the PMU.
TEST(RunSourceTest, LbrAndPtWithoutAPmuFailWithTheProbesReason) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  int checked = 0;
  for (const auto& [name, cap] :
       {std::pair<std::string, pathprof::collectors::SourceCapability>{"lbr", caps.lbr},
        {"pt", caps.intel_pt}}) {
    if (cap.available) continue;
    ++checked;
    const std::string cmd =
        std::string(PATHPROF_BIN_DIR) + "/pathctl run --source " + name + " -- true 2>&1";
    CmdResult r;
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
    const int status = pclose(f);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_NE(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find(cap.detail), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("cannot profile pid"), std::string::npos)
        << "the host's limit comes before any target: " << r.out;
  }
  if (checked == 0) GTEST_SKIP() << "this host has both LBR and PT";
}

}  // namespace
