// Authorization that holds over time, through the real daemon, with a real unprivileged user
// (made by the test) and a real setuid-root program (a copy of example_hotloop the test makes
// setuid in a directory of its own):
//  - a non-admin's session stops collecting when its target execs a setuid-root program, keeps
//    what it had and says why;
//  - under a non-admin's ptrace session the kernel grants no elevation (the tracer runs as the
//    user, so the exec stays unprivileged);
//  - a non-admin sees no kernel address or symbol where the host's policy hides them;
//  - whatever a non-admin does within its quotas, an admin can still start sessions.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "daemon_harness.h"
#include "pathprof/core/procfs.h"

namespace pathprof::daemon::testing {
namespace {

// The target's real, effective, saved and filesystem uids from /proc/PID/status.
std::string Uids(pid_t pid) {
  auto text = procfs::Procfs::Host().Read(pid, "status");
  if (!text.ok()) return "";
  const auto uids = procfs::StatusField(*text, "Uid");
  return uids ? std::string(*uids) : "";
}

uint32_t TestUid() {
  const passwd* p = getpwnam(kTestUser);
  return p != nullptr ? p->pw_uid : 0;
}

// setpriv changes credentials only after fork: until then the child is root, and a non-admin's
// session on it is rightly refused. Waits (bounded) until the child runs as the test user.
// setpriv changes the uids before it execs the command, and until that exec the process is not
// dumpable, so the user's own tracer may not attach (EPERM): wait for both.
bool RunsAsTestUser(pid_t pid) {
  const std::string uid = std::to_string(TestUid());
  const std::string want = uid + "\t" + uid + "\t" + uid + "\t" + uid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto name = procfs::Procfs::Host().Comm(pid);
    if (Uids(pid) == want && name.ok() && *name != "setpriv") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A directory with a setuid-root copy of example_hotloop, removed at the end.
class SetuidProgram {
 public:
  SetuidProgram() {
    char tmpl[] = "/tmp/pathprof-suid-XXXXXX";
    dir_ = mkdtemp(tmpl);
    chmod(dir_.c_str(), 0755);
    path_ = dir_ + "/suid_hotloop";
    Sh("cp " + kBin + "/example_hotloop " + path_ + " && chown root:root " + path_ +
       " && chmod 4755 " + path_);
  }
  ~SetuidProgram() { Sh("rm -rf " + dir_); }
  const std::string& path() const { return path_; }
  // Whether the kernel honours the setuid bit here (not on a nosuid mount).
  bool Works() const {
    struct stat st {};
    return stat(path_.c_str(), &st) == 0 && (st.st_mode & S_ISUID) &&
           Sh("findmnt -no OPTIONS -T " + dir_).out.find("nosuid") == std::string::npos;
  }

 private:
  std::string dir_, path_;
};

// Waits (at most 15 s) until `pid` runs `program` (its comm is the program's basename).
bool WaitForExec(pid_t pid, const std::string& program) {
  const std::string want = program.substr(program.rfind('/') + 1).substr(0, 15);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    auto name = procfs::Procfs::Host().Comm(pid);
    if (name.ok() && *name == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The user's process: a shell that waits `delay` seconds, then execs `program`. The delay must
// outlast starting a session on it (seconds with sanitizers under ctest -j2): before the exec,
// the process is the user's.
pid_t UserExecsLater(const std::string& program, const char* delay) {
  return Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                std::string("--regid=") + kTestGroup, "--clear-groups", "/bin/sh", "-c",
                std::string("sleep ") + delay + "; exec " + program + " 0"});
}

// Ends the process the test started (by pid) when the test ends, however it ends.
class Reaped {
 public:
  explicit Reaped(pid_t pid) : pid_(pid) {}
  ~Reaped() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

class Authorization : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.Ready()) << daemon_.Log(); }
  // Declared before daemon_, so the socket's group exists when the daemon starts.
  std::string as_ = EnsureTestUser();
  Daemon daemon_{"", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"}};
};

TEST_F(Authorization, SessionStopsWhenItsTargetExecsASetuidRootProgram) {
  SetuidProgram suid;
  if (!suid.Works()) GTEST_SKIP() << "setuid programs do not run from /tmp here (nosuid)";
  const Reaped guard(UserExecsLater(suid.path(), "4"));
  const pid_t target = guard.pid();
  ASSERT_TRUE(RunsAsTestUser(target)) << Uids(target);
  auto started =
      daemon_.Ctl("start --pid " + std::to_string(target) + " --source none --stack-hz 499", as_);
  ASSERT_EQ(started.rc, 0) << started.out << daemon_.Log();
  const std::string id = FirstLine(started.out);
  ASSERT_TRUE(WaitForExec(target, suid.path()));
  // Without a tracer the exec did elevate: the target now runs as root.
  EXPECT_NE(Uids(target).find("\t0\t"), std::string::npos) << Uids(target);
  // The session checks every 100 ms and then stops its collectors: bounded wait for that.
  CmdResult sessions;
  for (int i = 0; i < 100; ++i) {
    sessions = daemon_.Ctl("sessions --json", as_);
    if (sessions.out.find("\"state\":\"SESSION_STATE_STOPPED\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(sessions.out.find("\"state\":\"SESSION_STATE_STOPPED\""), std::string::npos)
      << sessions.out;
  EXPECT_NE(sessions.out.find("stopped collecting: pid " + std::to_string(target) +
                              " now holds privileges its requester (uid " +
                              std::to_string(TestUid()) + ") does not: effective uid 0"),
            std::string::npos)
      << sessions.out;
  // What was collected before stays readable; nothing after the change was taken.
  auto stats = daemon_.Ctl("stats " + id + " --json", as_);
  EXPECT_EQ(stats.rc, 0) << stats.out;
  auto tree = daemon_.Ctl("tree " + id + " --json", as_);
  EXPECT_TRUE(tree.rc == 0 || tree.rc == 3) << tree.out;  // 3: a sleeping shell left no sample
  EXPECT_EQ(tree.out.find("\"function\":\"hot\""), std::string::npos)
      << "samples of the setuid program reached the user: " << tree.out;
}

TEST_F(Authorization, NoElevationUnderANonAdminsPtraceSession) {
  SetuidProgram suid;
  if (!suid.Works()) GTEST_SKIP() << "setuid programs do not run from /tmp here (nosuid)";
  const Reaped guard(UserExecsLater(suid.path(), "4"));
  const pid_t target = guard.pid();
  ASSERT_TRUE(RunsAsTestUser(target)) << Uids(target);
  auto started =
      daemon_.Ctl("start --pid " + std::to_string(target) + " --source ptrace --stack-hz 0", as_);
  ASSERT_EQ(started.rc, 0) << started.out << daemon_.Log();
  const std::string id = FirstLine(started.out);
  ASSERT_TRUE(WaitForExec(target, suid.path()));
  // The exec happened under a tracer with the user's credentials: the kernel kept the user's.
  const std::string uid = std::to_string(TestUid());
  EXPECT_EQ(Uids(target), uid + "\t" + uid + "\t" + uid + "\t" + uid) << Uids(target);
  // And collecting goes on: hot paths arrive (bounded wait: the user's tracer runs at normal
  // priority, and under ctest -j2 its windows can take seconds).
  CmdResult paths;
  for (int i = 0; i < 30; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    paths = daemon_.Ctl("paths " + id + " --json", as_);
    if (paths.rc == 0) break;
  }
  EXPECT_EQ(paths.rc, 0) << paths.out;
  auto sessions = daemon_.Ctl("sessions --json", as_);
  EXPECT_NE(sessions.out.find("\"state\":\"SESSION_STATE_RUNNING\""), std::string::npos)
      << sessions.out;
}

TEST_F(Authorization, NonAdminsSeeNoKernelAddressesWhereTheHostHidesThem) {
  const procfs::Procfs& proc = procfs::Procfs::Host();
  const int kptr_restrict = proc.ReadSysctlInt("sys/kernel/kptr_restrict", 2);
  const int paranoid = proc.ReadSysctlInt("sys/kernel/perf_event_paranoid", 2);
  if (kptr_restrict == 0 && paranoid <= 1)
    GTEST_SKIP() << "this host shows kernel addresses to every user (kptr_restrict 0, "
                    "perf_event_paranoid <= 1)";
  // A user process that lives in the kernel: small reads and writes.
  const Reaped guard(Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                            std::string("--regid=") + kTestGroup, "--clear-groups", "/bin/dd",
                            "if=/dev/zero", "of=/dev/null", "bs=1"}));
  const pid_t target = guard.pid();
  ASSERT_TRUE(RunsAsTestUser(target)) << Uids(target);
  auto started =
      daemon_.Ctl("start --pid " + std::to_string(target) + " --source none --stack-hz 999", as_);
  ASSERT_EQ(started.rc, 0) << started.out << daemon_.Log();
  const std::string id = FirstLine(started.out);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  // Kernel addresses are 0xffff... : "184467..." in protobuf's JSON mapping (a uint64 is a
  // decimal string).
  const std::regex kernel_address("\"address\":\"18446[0-9]{15}\"");
  for (const std::string& query : {"tree " + id + " --json", "methods " + id + " --json",
                                   "paths " + id + " --json", "calls " + id + " --json"}) {
    auto user = daemon_.Ctl(query, as_);
    EXPECT_TRUE(user.rc == 0 || user.rc == 3) << query << ": " << user.out;  // 3: empty table
    EXPECT_FALSE(std::regex_search(user.out, kernel_address)) << query << ": " << user.out;
    EXPECT_EQ(user.out.find("kernel.kallsyms"), std::string::npos) << query << ": " << user.out;
  }
  auto user_tree = daemon_.Ctl("tree " + id + " --json", as_);
  EXPECT_NE(user_tree.out.find("\"function\":\"[kernel]\""), std::string::npos) << user_tree.out;
  // Root sees the kernel frames themselves.
  auto root_tree = daemon_.Ctl("tree " + id + " --json");
  EXPECT_TRUE(std::regex_search(root_tree.out, kernel_address)) << root_tree.out;
  // The export follows the same policy.
  // Written by the user, so somewhere the user may write.
  const std::string file = "/tmp/pathprof-auth-export-" + std::to_string(getpid()) + ".pb.gz";
  auto exported = daemon_.Ctl("export " + id + " -o " + file, as_);
  ASSERT_EQ(exported.rc, 0) << exported.out;
  auto traces = Sh("go tool pprof -traces " + file);
  if (traces.rc == 0) {
    EXPECT_NE(traces.out.find("[kernel]"), std::string::npos) << traces.out;
    EXPECT_EQ(traces.out.find("0xffff"), std::string::npos) << traces.out;
  }
  std::remove(file.c_str());
}

TEST(AuthorizationQuotas, ANonAdminCannotMakeTheDaemonRefuseAnAdmin) {
  const std::string as = EnsureTestUser();
  Daemon d(
      "[limits]\nmax_sessions = 5\nadmin_reserved_sessions = 2\nmax_sessions_per_client = "
      "10\n",
      {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  const Reaped guard(Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                            std::string("--regid=") + kTestGroup, "--clear-groups",
                            kBin + "/example_hotloop", "0"}));
  const pid_t mine = guard.pid();
  ASSERT_TRUE(RunsAsTestUser(mine)) << Uids(mine);
  const std::string start = "start --pid " + std::to_string(mine) + " --source none";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = d.Ctl(start, as);
    ASSERT_EQ(r.rc, 0) << r.out << d.Log();
    ids.push_back(FirstLine(r.out));
  }
  // One session's memory is bounded too: 4 M OSP entries is within max_osp_entries, but its
  // profiles could take ~370 MiB, above the 256 MiB a session may.
  auto big = d.Ctl(start + " --osp-entries 4000000", as);
  EXPECT_EQ(big.rc, 5) << big.out;
  EXPECT_NE(big.out.find("limits.max_session_memory_bytes"), std::string::npos) << big.out;
  // The user has filled what a non-admin may: 3 of 5, 2 kept for admins.
  auto refused = d.Ctl(start, as);
  EXPECT_EQ(refused.rc, 5) << refused.out;
  EXPECT_NE(refused.out.find("a non-admin may fill"), std::string::npos) << refused.out;
  // Stopping does not free the place (ended sessions keep their profiles), but at the cap the
  // user's own oldest ended session makes room.
  ASSERT_EQ(d.Ctl("stop " + ids[0], as).rc, 0);
  auto again = d.Ctl(start, as);
  EXPECT_EQ(again.rc, 0) << again.out;
  auto listed = d.Ctl("sessions", as);
  EXPECT_EQ(listed.out.find(ids[0]), std::string::npos) << "not evicted: " << listed.out;
  // Root still gets both reserved places.
  HotLoop roots;
  for (int i = 0; i < 2; ++i) {
    auto r = d.Ctl("start --pid " + std::to_string(roots.pid()) + " --source none");
    EXPECT_EQ(r.rc, 0) << r.out;
  }
  // What is held, and its memory, is reported.
  auto stats = d.Ctl("stats --json");
  EXPECT_NE(stats.out.find("\"sessions_held\":5,\"sessions_limit\":5"), std::string::npos)
      << stats.out;
  EXPECT_EQ(stats.out.find("\"sessions_memory_bound_bytes\":\"0\""), std::string::npos)
      << stats.out;
  // Deleting frees a place at once; the user may delete only its own sessions.
  auto root_session = d.Ctl("start --pid " + std::to_string(roots.pid()) + " --source none");
  EXPECT_EQ(root_session.rc, 5) << "the daemon is full: " << root_session.out;
  EXPECT_EQ(d.Ctl("rm " + ids[1], as).rc, 0);
  EXPECT_EQ(d.Ctl("paths " + ids[1], as).rc, 6);
  root_session = d.Ctl("start --pid " + std::to_string(roots.pid()) + " --source none");
  ASSERT_EQ(root_session.rc, 0) << root_session.out;
  auto denied = d.Ctl("rm " + FirstLine(root_session.out), as);
  EXPECT_EQ(denied.rc, 5) << denied.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
