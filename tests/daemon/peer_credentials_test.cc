// Who a connection is: the credentials the kernel kept with the socket when the client connected
// (SO_PEERCRED, SO_PEERGROUPS), never /proc of the connecting pid, which may be another
// process's by the time the daemon accepts. The attack, as a non-admin member of the socket group
// makes it: a client connects, passes the socket to its parent and exits; before the daemon
// accepts (held back here with SIGSTOP), a process of an admin-group member takes over the pid
// (here through ns_last_pid; on a busy host, by waiting for pid_max to wrap).
#include <fcntl.h>
#include <grp.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "daemon_harness.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/core/procfs.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathprof::daemon::testing {
namespace {

struct Ids {
  uid_t uid;
  gid_t gid;
};

// Drops the calling (forked) process to `ids` with the supplementary groups `groups`.
bool Become(const Ids& ids, const std::vector<gid_t>& groups) {
  return setgroups(groups.size(), groups.data()) == 0 &&
         setresgid(ids.gid, ids.gid, ids.gid) == 0 && setresuid(ids.uid, ids.uid, ids.uid) == 0;
}

// Forks a child that becomes `ids` in `groups` and connects to `socket_path`, sends the
// connected socket back over `channel` and exits; returns its pid.
pid_t ConnectAndHandOver(const std::string& socket_path, const Ids& ids, int channel) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (!Become(ids, {})) _exit(2);
  const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(3);
  char byte = 'x';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &c, sizeof c);
  _exit(sendmsg(channel, &msg, 0) == 1 ? 0 : 4);
}

int ReceiveFd(int channel) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(channel, &msg, 0) != 1) return -1;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (cm == nullptr || cm->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  return fd;
}

// A process of `ids` in `groups`, paused, whose pid is `pid` (free now): the kernel hands out
// ns_last_pid + 1 next, so the fork right after writing pid - 1 gets it unless another fork on
// the host comes between; tried a few times. -1 if the pid could not be taken.
pid_t TakePid(pid_t pid, const Ids& ids, const std::vector<gid_t>& groups) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::ofstream(procfs::Procfs::Host().GlobalPath("sys/kernel/ns_last_pid")) << pid - 1;
    const pid_t child = fork();
    if (child == 0) {
      if (Become(ids, groups)) pause();
      _exit(0);
    }
    if (child == pid) return child;
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    if (kill(pid, 0) == 0) return -1;  // another process has it
  }
  return -1;
}

// Whether /proc/PID/status lists `gid` among the process's supplementary groups.
bool StatusHasGroup(pid_t pid, gid_t gid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  return status.ok() &&
         std::find(status->groups.begin(), status->groups.end(), gid) != status->groups.end();
}

// Whether every thread of `pid` is stopped (a SIGSTOP reaches them one by one: the accepting
// thread could otherwise take a connection made just after the kill).
bool AllThreadsStopped(pid_t pid) {
  const procfs::Procfs& proc = procfs::Procfs::Host();
  for (int i = 0; i < 500; ++i) {
    const std::vector<pid_t> tids = proc.Tasks(pid);
    bool all = !tids.empty();
    for (pid_t tid : tids) {
      auto stat = proc.ReadTaskStat(pid, tid);
      if (!stat.ok() || stat->state != 'T') all = false;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST(PeerCredentials, AReusedPidDoesNotLendItsGroupsToTheConnection) {
  EnsureTestUser();
  EnsureAdminGroup();
  const group* admins = getgrnam(kAdminGroup);
  const group* clients = getgrnam(kTestGroup);
  ASSERT_NE(admins, nullptr);
  ASSERT_NE(clients, nullptr);
  const gid_t admin_gid = admins->gr_gid;
  const Ids user{UidOf(kTestUser), clients->gr_gid};
  ASSERT_NE(user.uid, 0u);
  Daemon d("", {"--socket-group", kTestGroup, "--admin-group", kAdminGroup});
  ASSERT_TRUE(d.Ready()) << d.Log();

  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_EQ(kill(d.pid(), SIGSTOP), 0);  // the daemon accepts late
  ASSERT_TRUE(AllThreadsStopped(d.pid())) << "the daemon did not stop";
  const pid_t client = ConnectAndHandOver(d.socket(), user, pair[1]);
  const int held = ReceiveFd(pair[0]);
  int status = 0;
  waitpid(client, &status, 0);
  close(pair[0]);
  close(pair[1]);
  const pid_t impostor = TakePid(client, user, {user.gid, admin_gid});
  bool lent = false;  // what /proc says of the connecting pid now: the admin group
  for (int i = 0; i < 200 && impostor > 0 && !(lent = StatusHasGroup(client, admin_gid)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // it drops to the user first
  kill(d.pid(), SIGCONT);
  ASSERT_GE(held, 0) << "the client exited with " << status;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  if (impostor < 0) {
    close(held);
    GTEST_SKIP() << "pid " << client << " was taken by another process before the test's";
  }
  struct KillImpostor {
    pid_t pid;
    ~KillImpostor() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } kill_impostor{impostor};
  ASSERT_TRUE(lent) << "pid " << client << " is not in group " << admin_gid;

  // The held socket as the client's connection: an admin-only call is refused as for the user.
  auto stub = v1::PathProfiler::NewStub(grpc::CreateInsecureChannelFromFd("held", held));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ImportRecordingRequest req;  // an empty path: an admin is told it is empty
  v1::Session resp;
  const grpc::Status s = stub->ImportRecording(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  auto info = api::ErrorInfoOf(s);
  EXPECT_TRUE(info && info->reason() == "ADMIN_ONLY") << s.error_message();
}

}  // namespace
}  // namespace pathprof::daemon::testing
