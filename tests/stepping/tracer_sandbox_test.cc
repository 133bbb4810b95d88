// The tracer interprets the target's code, so once it has seized the target it runs sandboxed
// (pathprof/stepping/helper_sandbox.h): no_new_privs and a seccomp filter, in an admin's session
// and in a confined one (which also runs as the requester, without capabilities). Checked on the
// real tracer process's /proc status while it takes windows, and against the attack: a tracer
// made to exec (what an exploit of the emulator would do) dies of the filter, the collector
// says so, and the target runs on untraced.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "pathprof/stepping/ptrace_bursts.h"
#include "ptrace_burst_test_util.h"

namespace pathprof::stepping {
namespace {

using testing::Bin;
using testing::Collected;
using testing::KillAndReap;
using testing::RunsFreely;
using testing::Spawn;
using testing::StatusField;
using testing::TracerPid;
using testing::WaitFor;

constexpr uid_t kNobody = 65534;

PtraceBurstOptions Options(pid_t pid) {
  PtraceBurstOptions o;
  o.pid = pid;
  o.bursts_per_second = 200;
  o.max_stopped_fraction = 0.3;
  o.seed = 7;
  return o;
}

// The hot loop as uid and gid `id`, no groups (a user's process, for a confined session).
pid_t SpawnAs(uid_t id) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0)
      _exit(126);
    const std::string path = Bin("example_hotloop_static");
    execl(path.c_str(), path.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// The tracer's /proc status lines that say what it may do.
struct Confinement {
  std::string uid, cap_eff, no_new_privs, seccomp;
};
Confinement Of(pid_t tracer) {
  return {StatusField(tracer, "Uid"), StatusField(tracer, "CapEff"),
          StatusField(tracer, "NoNewPrivs"), StatusField(tracer, "Seccomp")};
}

// Starts a collector on `target`, waits for windows taken after the sandbox went up, and returns
// the tracer's confinement.
Confinement WhileTakingWindows(PtraceBurstOptions o, pid_t target) {
  Collected got;
  auto c = PtraceBurstCollector::Start(o, got.Sink());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  long tracer = 0;
  EXPECT_TRUE(WaitFor([&] { return (tracer = TracerPid(target)) > 0; }, 10000));
  EXPECT_TRUE(WaitFor([&] { return got.size() >= 20; }, 20000))
      << got.size() << " windows; notes:\n"
      << got.Notes();
  const Confinement now = Of(static_cast<pid_t>(tracer));
  (*c)->Stop();
  EXPECT_EQ(got.Notes().find("sandbox"), std::string::npos) << got.Notes();
  return now;
}

TEST(TracerSandbox, AnAdminsTracerTakesWindowsUnderNoNewPrivsAndASeccompFilter) {
  const pid_t target = Spawn({Bin("example_hotloop_static")});
  ASSERT_GT(target, 0);
  const Confinement c = WhileTakingWindows(Options(target), target);
  EXPECT_EQ(c.no_new_privs, "1");
  EXPECT_EQ(c.seccomp, "2");  // SECCOMP_MODE_FILTER
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

TEST(TracerSandbox, AConfinedTracerIsTheUserWithoutCapabilitiesAndSandboxed) {
  const pid_t target = SpawnAs(kNobody);
  ASSERT_GT(target, 0);
  PtraceBurstOptions o = Options(target);
  o.run_as = TracerCredentials{kNobody, kNobody};
  const Confinement c = WhileTakingWindows(o, target);
  EXPECT_EQ(c.uid, std::to_string(kNobody));
  EXPECT_EQ(c.cap_eff, "0000000000000000");
  EXPECT_EQ(c.no_new_privs, "1");
  EXPECT_EQ(c.seccomp, "2");
  EXPECT_TRUE(RunsFreely(target));
  KillAndReap(target);
}

#ifndef NDEBUG
TEST(TracerSandbox, ATracerThatExecsAfterItsAttachDiesAndTheTargetRunsOn) {
  const pid_t target = Spawn({Bin("example_hotloop_static")});
  ASSERT_GT(target, 0);
  setenv("PATHPROF_TRACER_FAULT", "exec", 1);
  Collected got;
  auto c = PtraceBurstCollector::Start(Options(target), got.Sink());
  unsetenv("PATHPROF_TRACER_FAULT");
  // Either the start sees the tracer die, or the collector ends with it.
  std::string failure;
  if (!c.ok()) {
    failure = c.status().message();
  } else {
    EXPECT_TRUE(WaitFor([&] { return (*c)->finished(); }, 10000));
    failure = (*c)->failure();
    (*c)->Stop();
  }
  EXPECT_NE(failure.find("signal 31"), std::string::npos) << failure;  // SIGSYS
  EXPECT_EQ(got.size(), 0u);
  EXPECT_TRUE(RunsFreely(target));  // the kernel detached it when its tracer died
  KillAndReap(target);
}
#endif

}  // namespace
}  // namespace pathprof::stepping
