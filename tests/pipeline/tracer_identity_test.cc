// Whom an unconfined session's ptrace tracer runs as (SessionConfig::tracer_as_target): with
// it, the tracer of a plain user's process is that user (the code it interprets can do no more
// than its author), of root's own process root; without it, the caller. Real sessions, real
// tracers, their uid read from /proc while they take windows.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/procfs.h"
#include "pathprof/pipeline/session.h"

namespace {

namespace pl = pathprof::pipeline;
namespace procfs = pathprof::procfs;

constexpr uid_t kNobody = 65534;

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  const std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// The hot loop as `id` (0: as we are).
pid_t SpawnHotLoop(uid_t id) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (id != 0 &&
        (setgroups(0, nullptr) != 0 || setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0))
      _exit(126);
    const std::string path = Bin("example_hotloop_static");
    execl(path.c_str(), path.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

void End(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

std::string Field(pid_t pid, const char* key) {
  auto status = procfs::Procfs::Host().Read(pid, "status");
  if (!status.ok()) return "";
  auto v = procfs::StatusField(*status, key);
  return v ? std::string(*v) : "";
}

// The real uid of the tracer of `target`, once the session has taken windows from it.
struct Seen {
  std::string tracer_uid;
  uint64_t windows = 0;
  std::string source_reason;
};
Seen TracerOf(pid_t target, bool tracer_as_target) {
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  pl::SessionConfig c;
  c.pids = {static_cast<uint32_t>(target)};
  c.source = pl::SourceChoice::kPtrace;
  c.sampling.stack_hz = 0;
  c.tracer_as_target = tracer_as_target;
  auto session = pl::Session::Start("identity", c, caps, nullptr);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  Seen seen;
  for (int i = 0; i < 200; ++i) {
    const std::string tracer = Field(target, "TracerPid");
    const auto stats = (*session)->Stats();
    seen.windows = stats.empty() ? 0 : stats[0].windows;
    if (!tracer.empty() && tracer != "0" && seen.windows >= 10) {
      std::string uid = Field(std::atoi(tracer.c_str()), "Uid");
      seen.tracer_uid = uid.substr(0, uid.find_first_of(" \t"));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  seen.source_reason = (*session)->Info().source_reason;
  (*session)->Stop();
  return seen;
}

// A hot loop run as `target_uid` (0: root), profiled with or without tracer_as_target: its
// tracer's uid, once windows came.
void ExpectTracerUid(uid_t target_uid, bool tracer_as_target, uid_t tracer_uid) {
  const pid_t target = SpawnHotLoop(target_uid);
  ASSERT_GT(target, 0);
  const Seen seen = TracerOf(target, tracer_as_target);
  End(target);
  EXPECT_GE(seen.windows, 10u) << seen.source_reason;
  EXPECT_EQ(seen.tracer_uid, std::to_string(tracer_uid)) << seen.source_reason;
}

TEST(TracerIdentity, AsTargetAPlainUsersProcessIsTracedAsThatUser) {
  ExpectTracerUid(kNobody, true, kNobody);
}

TEST(TracerIdentity, AsTargetRootsOwnProcessIsTracedAsRoot) {
  ExpectTracerUid(0, true, 0);
}

TEST(TracerIdentity, WithoutItTheCallersTracerTracesAUsersProcess) {
  ExpectTracerUid(kNobody, false, 0);
}

}  // namespace
