// Shared caps that non-admins used to be able to fill to the last place (docs/operations.md,
// "Attacks tested"): the watch streams, where an admin keeps a reserve, and the Unix socket's
// connections, where users who fill the cap still leave another user room.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_harness.h"

namespace pathprof::daemon::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Processes started here, killed at scope exit unless already reaped.
struct Processes {
  std::vector<pid_t> pids;
  std::set<pid_t> reaped;
  ~Processes() {
    for (pid_t p : pids) {
      if (reaped.count(p) != 0) continue;
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }
  bool Alive(pid_t p) {
    if (reaped.count(p) != 0) return false;
    if (waitpid(p, nullptr, WNOHANG) == 0) return true;
    reaped.insert(p);
    return false;
  }
};

// Every watch stream a user may open: the shared cap less the admins' reserve. The user's
// `pathctl watch`es take what they may (3 of 4 here), the next is refused, and root's watch
// still runs (it was refused "too many watch streams" for as long as the user's ran).
TEST(HostileQuotas, UsersWatchesLeaveAdminsTheirReserve) {
  const std::string as = EnsureTestUser();
  EnsureAdminGroup();
  Daemon d("[limits]\nmax_streams = 4\nmax_streams_per_client = 8\nadmin_reserved_streams = 1\n",
           {"--socket-group", kTestGroup, "--admin-group", kAdminGroup});
  ASSERT_TRUE(d.Ready()) << d.Log();
  Processes procs;
  std::vector<std::string> sleep = AsUserArgv();
  sleep.insert(sleep.end(), {"/bin/sleep", "60"});
  const pid_t target = Spawn(sleep);
  procs.pids.push_back(target);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // exec'd as the user
  auto started = d.Ctl("start --pid " + std::to_string(target) + " --source none", as);
  ASSERT_EQ(started.rc, 0) << started.out << d.Log();
  const std::string id = FirstLine(started.out);

  std::vector<pid_t> watches;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> argv = AsUserArgv();
    argv.insert(argv.end(), {kBin + "/pathctl", "watch", id, "--interval", "1s", "--json",
                             "--socket", d.socket()});
    watches.push_back(Spawn(argv, d.dir() + "/watch" + std::to_string(i) + ".log"));
    procs.pids.push_back(watches.back());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // one after the other
  }
  // A refused watch exits at once; wait (up to 10 s) for one to, and a second more.
  auto exited = [&] {
    int n = 0;
    for (pid_t w : watches) n += procs.Alive(w) ? 0 : 1;
    return n;
  };
  for (int i = 0; i < 100 && exited() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  int running = 0;
  std::string refusals;
  for (size_t i = 0; i < watches.size(); ++i) {
    if (procs.Alive(watches[i]))
      ++running;
    else
      refusals += ReadAll(d.dir() + "/watch" + std::to_string(i) + ".log");
  }
  EXPECT_EQ(running, 3) << refusals;
  EXPECT_NE(refusals.find("too many watch streams"), std::string::npos) << refusals;
  EXPECT_NE(refusals.find("limits.admin_reserved_streams"), std::string::npos) << refusals;

  auto root = d.Ctl("watch " + id + " --interval 1s --count 1 --json");
  EXPECT_EQ(root.rc, 0) << "root's watch was refused: " << root.out;
}

// One user fills every connection non-admins may hold (6 of 8 here: the last 2 are the admins');
// another user's `pathctl ps` still connects and is answered, and so is root's.
TEST(HostileQuotas, UsersAtTheConnectionCapLeaveRoomForAnotherUser) {
  EnsureTestUser();
  const std::string as2 = EnsureSecondTestUser();
  EnsureAdminGroup();
  Daemon d("[limits]\nmax_connections = 8\nadmin_reserved_connections = 2\n",
           {"--socket-group", kTestGroup, "--admin-group", kAdminGroup});
  ASSERT_TRUE(d.Ready()) << d.Log();
  const std::string script =
      "import socket, sys, time\n"
      "held = []\n"
      "for i in range(12):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    s.connect(sys.argv[1]); held.append(s)\n"
      "    time.sleep(0.05)\n"
      "print('connected', flush=True)\n"
      "time.sleep(60)\n";
  std::ofstream(d.dir() + "/hold.py") << script;
  Processes procs;
  std::vector<std::string> argv = AsUserArgv();
  argv.insert(argv.end(), {"/usr/bin/python3", d.dir() + "/hold.py", d.socket()});
  procs.pids.push_back(Spawn(argv, d.dir() + "/hold.log"));
  for (int i = 0; i < 100 && ReadAll(d.dir() + "/hold.log").find("connected") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Every connection the daemon accepted or refused (refusals are logged at debug level).
  for (int i = 0; i < 50 && d.Log().find("are for admins") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(d.Log().find("are for admins (limits.admin_reserved_connections)"), std::string::npos)
      << "the first user never reached the non-admins' cap\n"
      << d.Log();

  auto other = d.Ctl("ps --timeout 5s", as2);
  EXPECT_EQ(other.rc, 0) << "the second user was locked out: " << other.out;
  auto root = d.Ctl("ps --timeout 5s");
  EXPECT_EQ(root.rc, 0) << "root was locked out: " << root.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
