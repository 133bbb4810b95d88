// One step-mode decision (stepping::ChooseStepMode) for everyone who uses or reports it: the
// burst tracer that steps, the capabilities (collectors) and their conversion (api) behind
// `pathctl caps` and the daemon, caps' printout, and the sessions of `pathctl run`, `start`
// and the daemon. For every request and a range of probe results built by hand, each says the
// same mode; then live, through the binaries, on probe results planted as this boot's cached
// probe (PATHPROF_STEP_PROBE_CACHE), and on the host's own: `pathctl caps` says auto means the
// mode a `pathctl bursts` run then steps with.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "pathprof/api/convert.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/host_quirks.h"
#include "pathprof/stepping/step_probe.h"
#include "pathprof/v1/profiler.pb.h"
#include "pathprof/v1/tools.pb.h"

namespace {

namespace fs = std::filesystem;
namespace st = pathprof::stepping;
namespace v1 = pathprof::v1;
const std::string kBin = PATHPROF_BIN_DIR;

const std::vector<std::optional<st::StepMode>> kRequests = {
    std::nullopt, st::StepMode::kSingleStep, st::StepMode::kBreakpoints, st::StepMode::kInt3,
    st::StepMode::kEmulate};

std::string Name(std::optional<st::StepMode> m) {
  return m ? std::string(st::StepModeName(*m)) : "auto";
}

// A probe in which every mechanism works, with this host's kind of costs.
st::StepProbeResult AllWork() {
  st::StepProbeResult p;
  p.ran = true;
  p.single_step = {true, "traps after every instruction; 21.9 us per step"};
  p.dr_breakpoints = {true, "fire; 25.7 us per stop"};
  p.int3_breakpoints = {true, "fire; 11.2 us per stop"};
  p.emulate = {true, "windows identical to single steps"};
  p.block_step = {false, "ignored"};
  p.single_step_ns = 21900;
  p.dr_leg_ns = 25700;
  p.int3_leg_ns = 11200;
  p.emulate_window_ns = 30200;
  return p;
}

struct Case {
  std::string name;
  st::StepProbeResult probe;
  std::optional<st::StepMode> auto_mode;  // nullopt: no mode works
};

std::vector<Case> SyntheticCases() {
  std::vector<Case> cases;
  cases.push_back({"everything works", AllWork(), st::StepMode::kEmulate});
  st::StepProbeResult p = AllWork();
  p.emulate = {false, "an emulated window differed"};
  cases.push_back({"int3 clearly cheaper", p, st::StepMode::kInt3});
  p.int3_leg_ns = 20000;  // not under 3/4 of 25.7 us
  cases.push_back({"int3 about as dear", p, st::StepMode::kBreakpoints});
  p.dr_breakpoints = {false, "armed but never fired"};
  cases.push_back({"debug registers never fire", p, st::StepMode::kInt3});
  p.int3_breakpoints = {false, "an int3 did not stop the child"};
  cases.push_back({"single steps only", p, st::StepMode::kSingleStep});
  p.single_step = {false, "no trap within 200 ms"};
  cases.push_back({"nothing works", p, std::nullopt});
  st::StepProbeResult not_ran;
  not_ran.error = "PTRACE_TRACEME refused";
  cases.push_back({"the probe could not run", not_ran, std::nullopt});
  return cases;
}

TEST(StepModeChoice, EveryRequestOnEveryProbeGivesOneAnswerWhoeverAsks) {
  for (const Case& c : SyntheticCases()) {
    for (const std::optional<st::StepMode>& request : kRequests) {
      SCOPED_TRACE(c.name + ", request " + Name(request));
      const st::StepModeChoice choice = st::ChooseStepMode(request, c.probe);
      EXPECT_FALSE(choice.reason.empty());
      if (request) {  // a named mode is that mode, where it works
        EXPECT_EQ(choice.mode, *request);
        EXPECT_EQ(choice.ok, c.probe.ran && c.probe.Works(*request));
        if (c.probe.ran && !choice.ok) {
          EXPECT_NE(choice.reason.find("does not work on this host"), std::string::npos);
          EXPECT_NE(choice.reason.find(c.probe.Of(*request).detail), std::string::npos);
        }
        continue;
      }
      EXPECT_EQ(choice.ok, c.auto_mode.has_value()) << choice.reason;
      if (!c.auto_mode) continue;
      EXPECT_EQ(choice.mode, *c.auto_mode) << choice.reason;
      // The other consumers of the same probe: BestMode, and the conversion that caps and the
      // daemon's GetCapabilities answer with.
      EXPECT_EQ(c.probe.BestMode(), choice.mode);
      v1::StepMechanisms m;
      pathprof::api::ToProto(c.probe, &m);
      EXPECT_EQ(m.auto_step_mode(), pathprof::api::ToProto(choice.mode));
    }
  }
}

// ---------------------------------------------------------------- planted probe results

class PlantedProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the capabilities probe attaches with ptrace (root here)";
    dir_ = fs::temp_directory_path() / ("pathprof-step-choice-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    cache_ = (dir_ / "step-probe").string();
  }
  void TearDown() override {
    unsetenv("PATHPROF_STEP_PROBE_CACHE");
    if (target_ > 0) {
      kill(target_, SIGKILL);
      waitpid(target_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes `probe` where CachedStepProbe reads this boot's result (under the quirks simulated
  // now, which the key names), for this process and the pathctl it runs.
  void Plant(const st::StepProbeResult& probe) {
    std::ofstream out(cache_, std::ios::trunc);
    out << "key=" << st::StepProbeCacheKey(pathprof::SimulatedQuirks()) << "\n"
        << probe.Serialize();
    out.close();
    setenv("PATHPROF_STEP_PROBE_CACHE", cache_.c_str(), 1);
  }

  pathprof::testing::CommandResult Ctl(const std::string& args) {
    return pathprof::testing::RunCommand("PATHPROF_STEP_PROBE_CACHE=" + cache_ + " " + kBin +
                                         "/pathctl " + args);
  }

  pid_t Target() {
    if (target_ > 0) return target_;
    target_ = fork();
    if (target_ == 0) {
      const std::string program = kBin + "/example_hotloop";
      execl(program.c_str(), program.c_str(), "0", nullptr);
      _exit(127);
    }
    return target_;
  }

  fs::path dir_;
  std::string cache_;
  pid_t target_ = -1;
};

// The real probe with mechanisms switched off and costs moved, so that whatever auto then
// picks really works on this host when a burst run steps with it.
std::vector<Case> CasesFromThisHost(const st::StepProbeResult& real) {
  std::vector<Case> cases;
  auto add = [&](const std::string& name, st::StepProbeResult p) {
    const st::StepModeChoice c = st::ChooseStepMode(std::nullopt, p);
    cases.push_back({name, p, c.ok ? std::optional<st::StepMode>(c.mode) : std::nullopt});
  };
  add("as probed", real);
  st::StepProbeResult p = real;
  p.emulate.works = false;
  if (p.dr_breakpoints.works && p.int3_breakpoints.works) {
    p.dr_leg_ns = 30000, p.int3_leg_ns = 10000;
    add("int3 clearly cheaper", p);
    p.dr_leg_ns = 20000, p.int3_leg_ns = 19000;
    add("int3 about as dear", p);
  }
  p.dr_breakpoints.works = false;
  add("no debug registers", p);
  p.int3_breakpoints.works = false;
  add("single steps only", p);
  p.single_step.works = false;
  add("nothing works", p);
  return cases;
}

TEST_F(PlantedProbe, CapsCapabilitiesBurstsAndRunSayTheSameMode) {
  const st::StepProbeResult real = st::CachedStepProbe();
  if (!real.ran || !real.single_step.works) GTEST_SKIP() << "no step mechanism works here";
  for (const Case& c : CasesFromThisHost(real)) {
    SCOPED_TRACE(c.name);
    Plant(c.probe);
    const st::StepModeChoice choice = st::ChooseStepMode(std::nullopt, c.probe);
    const std::string mode = Name(c.auto_mode);
    // The capabilities (collectors) and their conversion (api), in this process.
    const pathprof::collectors::HostCapabilities caps =
        pathprof::collectors::ProbeHostCapabilities();
    EXPECT_EQ(caps.ptrace.available, c.auto_mode.has_value()) << caps.ptrace.detail;
    if (c.auto_mode) {
      EXPECT_NE(caps.ptrace.detail.find("bursts step with " + mode + " (" + choice.reason + ")"),
                std::string::npos)
          << caps.ptrace.detail;
      v1::Capabilities proto;
      pathprof::api::ToProto(caps, &proto);
      EXPECT_EQ(proto.step_mechanisms().auto_step_mode(), pathprof::api::ToProto(*c.auto_mode));
    }
    // pathctl caps: the JSON and the printout.
    const auto json = Ctl("caps --json 2>/dev/null");
    ASSERT_EQ(json.rc, 0);
    v1::Capabilities reported;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &reported).ok()) << json.out;
    const auto text = Ctl("caps 2>/dev/null");
    // A burst run on a live target, and a profiling session (pathctl run) on it.
    const std::string pid = std::to_string(Target());
    const auto bursts = Ctl("bursts -p " + pid + " --duration 300ms --json 2>&1 >" +
                            (dir_ / "bursts.json").string());
    const auto run =
        Ctl("run --source ptrace -F 0 --duration 300ms -p " + pid + " --json 2>&1 >/dev/null");
    if (!c.auto_mode) {
      EXPECT_NE(bursts.rc, 0);
      EXPECT_NE(bursts.out.find(choice.reason), std::string::npos) << bursts.out;
      continue;
    }
    EXPECT_EQ(reported.step_mechanisms().auto_step_mode(), pathprof::api::ToProto(*c.auto_mode));
    EXPECT_NE(text.out.find("step mode for --step-mode auto: " + mode + " (" + choice.reason),
              std::string::npos)
        << text.out;
    EXPECT_TRUE(bursts.rc == 0 || bursts.rc == 3) << bursts.out;
    std::ifstream in(dir_ / "bursts.json");
    const std::string report_json((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    v1::BurstsReport report;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(report_json, &report).ok())
        << report_json << bursts.out;
    EXPECT_EQ(report.step_mode(), pathprof::api::ToProto(*c.auto_mode)) << bursts.out;
    // The step mode said once, briefly: the probe's reasoning is caps' (checked above).
    EXPECT_NE(run.out.find("; step mode " + mode + " (auto: the step probe's choice"),
              std::string::npos)
        << run.out;
  }
}

// With the host's own probe (no planted result): what caps says auto means is what bursts use.
TEST_F(PlantedProbe, CapsAutoIsWhatBurstsUseOnThisHost) {
  unsetenv("PATHPROF_STEP_PROBE_CACHE");
  const auto json = pathprof::testing::RunCommand(kBin + "/pathctl caps --json 2>/dev/null");
  ASSERT_EQ(json.rc, 0);
  v1::Capabilities caps;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &caps).ok()) << json.out;
  if (!caps.ptrace_bursts().available()) GTEST_SKIP() << caps.ptrace_bursts().detail();
  const auto bursts = pathprof::testing::RunCommand(
      kBin + "/pathctl bursts -p " + std::to_string(Target()) + " --duration 300ms --json");
  ASSERT_TRUE(bursts.rc == 0 || bursts.rc == 3);
  v1::BurstsReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bursts.out, &report).ok()) << bursts.out;
  EXPECT_EQ(report.step_mode(), caps.step_mechanisms().auto_step_mode());
}

}  // namespace
