// `--source lbr|pt` through Session: where the host lacks the PMU the session refuses with the
// capability probe's reason (before anything about the targets); where it has one, a spinning
// child yields branch windows. The record handling itself is tested without a PMU in
// tests/collectors/{lbr,pt}_source_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/pipeline/session.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::ErrorCode;

pl::SessionConfig BranchesOnly(pl::SourceChoice source, uint32_t pid) {
  pl::SessionConfig c;
  c.pids = {pid};
  c.source = source;
  c.sampling.stack_hz = 0;
  return c;
}

struct Case {
  pl::SourceChoice source;
  const pathprof::collectors::SourceCapability& cap;
};

TEST(SessionSource, AnExplicitSourceTheHostLacksFailsWithTheProbesReason) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  int checked = 0;
  for (const Case& c :
       {Case{pl::SourceChoice::kLbr, caps.lbr}, Case{pl::SourceChoice::kIntelPt, caps.intel_pt}}) {
    if (c.cap.available) continue;
    ++checked;
    // A live target and a missing one: the host's limit is what is reported either way.
    for (uint32_t pid : {uint32_t(getpid()), 0x3fffffffu}) {
      auto s = pl::Session::Start("t", BranchesOnly(c.source, pid), caps, nullptr);
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.status().code(), ErrorCode::kUnavailable);
      EXPECT_NE(s.status().message().find(c.cap.detail), std::string::npos) << s.status().message();
      EXPECT_NE(s.status().message().find("--source auto"), std::string::npos);
    }
  }
  if (checked == 0) GTEST_SKIP() << "this host has both LBR and PT";
}

TEST(SessionSource, AutoWithoutAPmuSaysWhyItTookAnotherSource) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  if (caps.lbr.available || caps.intel_pt.available) GTEST_SKIP() << "this host has a PMU";
  std::string reason;
  auto chosen = pl::ChooseBranchSource(pl::SourceChoice::kAuto, caps, &reason);
  ASSERT_TRUE(chosen.ok());
  EXPECT_NE(*chosen, pathprof::collectors::BranchSource::kLbr);
  EXPECT_NE(reason.find(caps.lbr.detail.substr(0, 40)), std::string::npos) << reason;
}

// Runs only where the PMU is there (not in this project's CI VM).
TEST(SessionSource, LiveSourcesFeedWindowsFromASpinningChild) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  for (const Case& c :
       {Case{pl::SourceChoice::kLbr, caps.lbr}, Case{pl::SourceChoice::kIntelPt, caps.intel_pt}}) {
    if (!c.cap.available) continue;
    const pid_t child = fork();
    if (child == 0) {
      volatile uint64_t x = 0;
      for (;;)
        for (int i = 0; i < 1000; ++i) x = x + ((i & 3) ? 1 : 2);
    }
    auto s = pl::Session::Start("t", BranchesOnly(c.source, uint32_t(child)), caps, nullptr);
    if (s.ok()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      (*s)->Stop();
      const auto stats = (*s)->Stats();
      ASSERT_EQ(stats.size(), 1u);
      EXPECT_GT(stats[0].branches, 0u) << (*s)->Info().source_reason;
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  if (!caps.lbr.available && !caps.intel_pt.available)
    GTEST_SKIP() << "no PMU here: " << caps.lbr.detail;
}

}  // namespace
