// One table of session defaults (pipeline/include/pathprof/pipeline/session_defaults.h), read
// through all three users: the daemon's conversion of a request that leaves the field unset,
// `pathctl run`'s config from its flags (cli/pathctl/session_flags.cc, compiled in), and
// `pathctl start`'s usage and declarations. max_descendants once disagreed (4 in the daemon, 64 in
// run). Following children is the one default that differs, on purpose: on in run (as perf
// record), off in start and the daemon (session_flags.h says why).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/run_command.h"
#include "pathctl/session_flags.h"
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

}  // namespace
