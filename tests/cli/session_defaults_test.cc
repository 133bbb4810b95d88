// One table of session defaults (pipeline/include/pathprof/pipeline/session_defaults.h), read
// through all three users: the daemon's conversion of a request that leaves the field unset,
// `pathctl run`'s config from its flags (cli/pathctl/session_flags.cc, compiled in), and
// `pathctl start`'s usage and declarations. max_descendants once disagreed (4 in the daemon, 64 in
// run). Following children is the one default that differs, on purpose: on in run (as perf
// record), off in start and the daemon (session_flags.h says why).
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "daemon/daemon_harness.h"
#include "pathctl/session_flags.h"
#include "pathprof/api/convert.h"
#include "pathprof/api/session_request.h"
#include "pathprof/pipeline/session_defaults.h"

namespace {

using pathprof::pipeline::kSessionDefaults;
using pathprof::pipeline::SessionConfig;

std::string Ctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args + " 2>&1")
      .out;
}

// run's config from a command line of session flags.
SessionConfig RunConfig(std::vector<std::string> argv, std::vector<std::string>* problems) {
  pathctl::Args args(std::move(argv), pathctl::SessionFlags(pathctl::kRunFollowsChildren));
  SessionConfig config;
  pathctl::ReadSessionConfig(args, &config, problems);
  return config;
}

TEST(SessionDefaults, MaxDescendantsIsOneValueInTheDaemonRunAndStart) {
  // The documented value (pathctl(1), cli/README.md).
  EXPECT_EQ(kSessionDefaults.max_descendants, 4u);

  // The daemon: a request that follows children and leaves max_descendants unset. (Converted
  // into a config that starts elsewhere, so the value comes from the conversion.)
  pathprof::v1::StartSessionRequest req;
  req.set_follow_children(true);
  SessionConfig daemon;
  daemon.max_descendants = 1;
  ASSERT_TRUE(pathprof::api::ToSessionConfig(pathprof::api::SettingsOf(req), {}, "", &daemon).ok());
  EXPECT_EQ(daemon.max_descendants, 4u);

  // pathctl run --inherit.
  std::vector<std::string> problems;
  const SessionConfig run = RunConfig({"--inherit"}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(run.follow_children);
  EXPECT_EQ(run.max_descendants, 4u);
  EXPECT_EQ(RunConfig({"--inherit", "--max-descendants", "3"}, &problems).max_descendants, 3u);

  // pathctl start: what its usage and declarations say (a flag not given leaves the request's
  // field unset, which the daemon fills as above).
  const std::string usage = Ctl("help start");
  const size_t at = usage.find("--max-descendants N");
  ASSERT_NE(at, std::string::npos) << usage;
  EXPECT_NE(usage.find("default 4", at), std::string::npos) << usage.substr(at, 200);
  EXPECT_NE(Ctl("help --flags start").find("max-descendants\t\tint\t4\t"), std::string::npos);
  EXPECT_NE(Ctl("help --flags run").find("max-descendants\t\tint\t4\t"), std::string::npos);
}

// run follows a command's children unless --no-inherit, as perf record does (a `sh -c 'xz ...'`
// did its work in xz); start and the daemon follow them only when asked.
TEST(SessionDefaults, RunFollowsChildrenUnlessNoInheritStartOnlyWithInherit) {
  EXPECT_FALSE(kSessionDefaults.follow_children);
  pathprof::v1::StartSessionRequest empty;
  SessionConfig daemon;
  ASSERT_TRUE(
      pathprof::api::ToSessionConfig(pathprof::api::SettingsOf(empty), {}, "", &daemon).ok());
  EXPECT_FALSE(daemon.follow_children);
  std::vector<std::string> problems;
  const SessionConfig run = RunConfig({}, &problems);
  EXPECT_TRUE(run.follow_children);
  EXPECT_EQ(run.max_descendants, kSessionDefaults.max_descendants);
  EXPECT_FALSE(RunConfig({"--no-inherit"}, &problems).follow_children);
  EXPECT_TRUE(RunConfig({"--inherit"}, &problems).follow_children);
  EXPECT_TRUE(problems.empty());
  RunConfig({"--inherit", "--no-inherit"}, &problems);
  EXPECT_EQ(problems, std::vector<std::string>{"give --inherit or --no-inherit, not both"});
  // Both commands take both spellings, and say which is the default: run --inherit, start
  // --no-inherit.
  for (const auto& [cmd, flag] : {std::pair<const char*, const char*>{"run", "\n  --inherit"},
                                  {"start", "\n  --no-inherit"}}) {
    const std::string usage = Ctl(std::string("help ") + cmd);
    const size_t at = usage.find(flag);
    ASSERT_NE(at, std::string::npos) << usage;
    const size_t line_end = usage.find("\n  --", at + 1);
    EXPECT_EQ(usage.find("(the default)", at), usage.find("(the default)")) << cmd << usage;
    EXPECT_LT(usage.find("(the default)", at), line_end) << cmd << usage;
    EXPECT_NE(usage.find("\n  --inherit"), std::string::npos) << usage;
    EXPECT_NE(usage.find("\n  --no-inherit"), std::string::npos) << usage;
  }
}

TEST(SessionDefaults, RunTakesEveryOtherSettingFromTheTable) {
  std::vector<std::string> problems;
  const SessionConfig run = RunConfig({}, &problems);
  EXPECT_EQ(run.sampling.stack_hz, kSessionDefaults.stack_hz);
  EXPECT_EQ(run.sampling.window_branches, kSessionDefaults.window_branches);
  EXPECT_EQ(run.sampling.max_stopped_fraction, kSessionDefaults.max_stopped_fraction);
  EXPECT_EQ(run.engine.max_path_length, kSessionDefaults.max_path_length);
  EXPECT_EQ(run.engine.hpt_entries, kSessionDefaults.hpt_entries);
  EXPECT_EQ(run.osp.memory_entries, kSessionDefaults.osp_memory_entries);
  EXPECT_EQ(run.pcct.max_depth, kSessionDefaults.pcct_max_depth);
  EXPECT_EQ(RunConfig({"-F", "7"}, &problems).sampling.stack_hz, 7u);
  EXPECT_TRUE(problems.empty());
}

// One road from flags to a session: each session flag, given to `pathctl start` (the real binary,
// against a real daemon: its CreateSession request converted by api::ToSessionConfig) and read
// by `pathctl run` (its flag reading, compiled in), gives one SessionConfig, compared field by
// field as the daemon reports it (Session.settings, every field filled in). Every declared
// session flag needs a value here that is not its default, so a new flag is covered or fails.
TEST(SessionRoad, EveryFlagReachesTheSameConfigThroughStartAndRun) {
  // A value of each flag other than its default (and within the daemon's default limits), with
  // what else it needs to apply.
  const std::map<std::string, std::vector<std::string>> kSamples = {
      {"source", {"--source", "none"}},
      {"step-mode", {"--step-mode", "int3"}},
      {"call-graph", {"--call-graph", "dwarf,8192"}},
      {"freq", {"-F", "7"}},
      {"burst-rate", {"--burst-rate", "5"}},
      {"window", {"--window", "16"}},
      {"max-stopped", {"--max-stopped", "0.01"}},
      {"path-kind", {"--path-kind", "extended-loops"}},
      {"extension", {"--extension", "3"}},
      {"max-length", {"--max-length", "16"}},
      {"hpt-entries", {"--hpt-entries", "1024"}},
      {"osp-entries", {"--osp-entries", "500"}},
      {"max-depth", {"--max-depth", "64"}},
      {"duration", {"--duration", "7s"}},
      // Under the daemon's default session memory limit: each descendant may take a store
      // (--inherit alone is run's default, and with 4 descendants passes the limit).
      {"inherit", {"--inherit", "--max-descendants", "2"}},
      {"no-inherit", {"--no-inherit"}},
      {"max-descendants", {"--inherit", "--max-descendants", "3"}},
  };
  using pathprof::daemon::testing::Daemon;
  Daemon daemon;
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  const pid_t target = pathprof::daemon::testing::Spawn({"/bin/sleep", "60"});
  ASSERT_GT(target, 0);
  auto settings_of_run = [](const std::vector<std::string>& argv) {
    std::vector<std::string> problems;
    pathprof::v1::SessionSettings out;
    pathprof::api::ToProto(RunConfig(argv, &problems), &out);
    EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
    return out;
  };
  for (const pathctl::Flag& flag : pathctl::SessionFlags(pathctl::kRunFollowsChildren)) {
    SCOPED_TRACE("--" + flag.name);
    const auto sample = kSamples.find(flag.name);
    if (sample == kSamples.end()) {
      ADD_FAILURE() << "no sample value for --" << flag.name << ": add one to kSamples";
      continue;
    }
    // Light sessions (no branch source, a stack sample a second: a session must collect
    // something) but for the flag under test, and
    // following children said (run follows them by default, start does not) but for the flags
    // that say it.
    std::vector<std::string> base;
    if (flag.name != "source") base.insert(base.end(), {"--source", "none"});
    if (flag.name != "freq") base.insert(base.end(), {"-F", "1"});
    if (flag.name != "inherit" && flag.name != "no-inherit" && flag.name != "max-descendants")
      base.push_back("--no-inherit");
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), sample->second.begin(), sample->second.end());
    pathprof::v1::SessionSettings run = settings_of_run(argv);
    // The flag says something: run's config differs from the one without it (but for
    // --duration, which run times itself: compared with the daemon's below).
    if (flag.name != "duration") {
      EXPECT_FALSE(google::protobuf::util::MessageDifferencer::Equals(run, settings_of_run(base)));
    }

    std::string line;
    for (const std::string& a : argv) line += " '" + a + "'";
    const auto started = daemon.Ctl("start -p " + std::to_string(target) + line + " --json");
    ASSERT_EQ(started.rc, 0) << started.out;
    pathprof::v1::Session session;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                    started.out.substr(std::min(started.out.find('{'), started.out.size())),
                    &session, options)
                    .ok())
        << started.out;
    pathprof::v1::SessionSettings daemon_settings = session.settings();
    // run times --duration itself (to the millisecond); its session has none of its own.
    if (flag.name == "duration") {
      EXPECT_EQ(daemon_settings.duration().seconds(), 7);
      EXPECT_EQ(run.duration().seconds(), 0);
      daemon_settings.clear_duration();
      run.clear_duration();
    }
    std::string differences;
    google::protobuf::util::MessageDifferencer diff;
    diff.ReportDifferencesToString(&differences);
    EXPECT_TRUE(diff.Compare(daemon_settings, run)) << "start (left) and run (right) differ:\n"
                                                    << differences;
    daemon.Ctl("rm " + session.name());
  }
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
}

}  // namespace
