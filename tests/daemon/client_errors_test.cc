// pathctl tells apart why it could not talk to the daemon, each with its own exit code: nothing
// at the socket path (4), a socket nobody listens on (4), a socket this user may not open (7,
// naming the group to join), and a daemon that does not answer in time (8). A daemon's own error
// is "daemon error" (1). They were once all "daemon not running ... systemctl start pathprofd".
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "daemon_harness.h"

namespace pathprof::daemon::testing {
namespace {

// A Unix socket at `path` that is bound and, when `listen_to`, listening, but never accepts:
// connections queue in the backlog and get no answer.
int BoundSocket(const std::string& path, bool listen_to) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  if (listen_to && listen(fd, 16) != 0) return -1;
  return fd;
}

TEST(DaemonClient, NothingAtTheSocketPath) {
  auto r = Sh(kBin + "/pathctl sessions --socket /tmp/pathprof-no-such-dir/x.sock --timeout 2");
  EXPECT_EQ(r.rc, 4) << r.out;
  EXPECT_NE(r.out.find("no daemon at /tmp/pathprof-no-such-dir/x.sock (No such file or "
                       "directory; start it with: systemctl start pathprofd)"),
            std::string::npos)
      << r.out;
}

TEST(DaemonClient, ASocketNobodyListensOn) {
  char dir[] = "/tmp/pathctl-stale-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/stale.sock";
  const int fd = BoundSocket(path, false);
  ASSERT_GE(fd, 0);
  auto r = Sh(kBin + "/pathctl sessions --socket " + path + " --timeout 2");
  close(fd);
  Sh(std::string("rm -rf ") + dir);
  EXPECT_EQ(r.rc, 4) << r.out;
  EXPECT_NE(r.out.find("no daemon listening on " + path), std::string::npos) << r.out;
}

TEST(DaemonClient, ADaemonThatDoesNotAnswerInTime) {
  char dir[] = "/tmp/pathctl-mute-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/mute.sock";
  const int fd = BoundSocket(path, true);
  ASSERT_GE(fd, 0);
  auto r = Sh(kBin + "/pathctl sessions --socket " + path + " --timeout 1");
  close(fd);
  Sh(std::string("rm -rf ") + dir);
  EXPECT_EQ(r.rc, 8) << r.out;
  EXPECT_NE(r.out.find("timed out after 1 s waiting for the daemon at " + path), std::string::npos)
      << r.out;
}

TEST(DaemonClient, ASocketThisUserMayNotOpen) {
  const std::string as = EnsureTestUser();
  Daemon d;  // no --socket-group: root only
  ASSERT_TRUE(d.Ready()) << d.Log();
  auto r = d.Ctl("sessions --timeout 2", as);
  EXPECT_EQ(r.rc, 7) << r.out;
  EXPECT_NE(r.out.find("permission denied on the socket " + d.socket()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("join it: sudo usermod -aG"), std::string::npos) << r.out;
  // Root gets in; a refusal by the daemon itself is not a connection problem.
  auto root = d.Ctl("ps --limit 1");
  EXPECT_EQ(root.rc, 0) << root.out;
  auto missing = d.Ctl("paths no-such-session");
  EXPECT_EQ(missing.rc, 6) << missing.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
