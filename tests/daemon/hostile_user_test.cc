// A non-admin member of the socket group, attacking the real daemon (root, as packaged) with the
// exact attacks of the threat model (docs/operations.md, "Attacks tested"): each test makes the
// attack and checks the outcome — the daemon alive and answering root within a second, no byte
// of a root-only file in any reply or export, memory bounded, no session nobody asked for.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <sstream>

#include "common/figures.h"
#include "daemon_harness.h"
#include "pathprof/core/procfs.h"

namespace pathprof::daemon::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

size_t OpenFds(pid_t pid) {
  return procfs::Procfs::Host().NumericEntries(pid, "fd", 1 << 20).size();
}

// The text around the first `needle` in `haystack`, for a failure's message.
std::string Around(const std::string& haystack, const std::string& needle) {
  const size_t at = haystack.find(needle);
  return at == std::string::npos ? "" : haystack.substr(at < 200 ? 0 : at - 200, 400);
}

// A process started as the test user (setpriv execs the command: the pid is the command's),
// killed at scope exit.
class UserProcess {
 public:
  UserProcess(const std::vector<std::string>& argv, const std::string& log = "") {
    std::vector<std::string> full = {"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                                     std::string("--regid=") + kTestGroup, "--clear-groups"};
    full.insert(full.end(), argv.begin(), argv.end());
    pid_ = Spawn(full, log);
  }
  ~UserProcess() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // Waits (bounded) until the process runs as the user and has exec'd `comm`.
  bool Ready(const std::string& comm) const {
    for (int i = 0; i < 500; ++i) {
      const procfs::Procfs& proc = procfs::Procfs::Host();
      auto name = proc.Comm(pid_);
      auto owner = proc.Owner(pid_);
      if (name.ok() && *name == comm.substr(0, 15) && owner.ok() && *owner == UidOf(kTestUser))
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
};

// A directory the test user owns, removed at the end.
class UserDir {
 public:
  UserDir() {
    char tmpl[] = "/tmp/pathprof-hostile-XXXXXX";
    path_ = mkdtemp(tmpl);
    chmod(path_.c_str(), 0755);
    Sh("chown " + std::string(kTestUser) + " " + path_);
  }
  ~UserDir() { Sh("rm -rf " + path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A root-only binary (mode 0700 in a directory root owns) whose functions have names that
// appear nowhere else: if one shows up in a reply, the daemon read it for a user who may not.
// They fill its code from the start of .text on for 40 KiB, so whatever the offsets of the
// user's own hot code, an image read from this file names them with a marker (as BOLT's export
// does: it looks the user's offsets up in whichever image it was given).
class RootOnlyBinary {
 public:
  static constexpr const char* kMarker = "root_only_secret_marker";
  RootOnlyBinary() {
    char tmpl[] = "/tmp/pathprof-secret-XXXXXX";
    dir_ = mkdtemp(tmpl);
    chmod(dir_.c_str(), 0755);
    path_ = dir_ + "/secret";
    std::ofstream source(dir_ + "/secret.c");
    for (int i = 0; i < 1024; ++i)
      source << "int " << kMarker << "_" << i << "(int x) { return x * " << i << " + 1; }\n";
    source << "int main(void) { volatile int s = 0; for (;;) s = " << kMarker << "_3(s); }\n";
    source.close();
    built_ = Sh("cc -O0 -g -o " + path_ + " " + dir_ + "/secret.c && chmod 0700 " + path_).rc == 0;
  }
  ~RootOnlyBinary() { Sh("rm -rf " + dir_); }
  bool built() const { return built_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  bool built_ = false;
};

class HostileUser : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.Ready()) << daemon_.Log(); }
  // A user's hot loop run from `dir`/prog, which the user then deletes and replaces with a
  // symlink named "prog (deleted)" (the name /proc/PID/maps gives it) to `link_to`.
  std::unique_ptr<UserProcess> LoopBehindSymlink(const UserDir& dir, const std::string& link_to) {
    Sh("cp " + kBin + "/example_hotloop " + dir / "prog" + " && chown " + kTestUser + " " +
       dir / "prog");
    auto p = std::make_unique<UserProcess>(std::vector<std::string>{dir / "prog", "0"});
    EXPECT_TRUE(p->Ready("prog"));
    Sh(as_ + "sh -c 'rm " + dir / "prog" + " && ln -s " + link_to + " \"" + dir / "prog" +
       " (deleted)\"'");
    EXPECT_TRUE(fs::is_symlink(dir / "prog (deleted)"));
    return p;
  }
  // Starts a session as the user and waits (up to 60 s) until its paths and methods answer.
  std::string StartAndWait(pid_t pid) {
    auto started = daemon_.Ctl("start --pid " + std::to_string(pid), as_);
    EXPECT_EQ(started.rc, 0) << started.out << daemon_.Log();
    const std::string id = FirstLine(started.out);
    for (int i = 0; i < 240; ++i) {
      if (daemon_.Ctl("paths " + id + " --json", as_).rc == 0 &&
          daemon_.Ctl("methods " + id + " --json", as_).rc == 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return id;
  }
  // Everything a user can read of a session: tables, trees, exports.
  std::string AllReplies(const std::string& id) {
    std::string all;
    for (const char* q : {"paths", "methods", "tree", "subpaths", "calls"})
      all += daemon_.Ctl(std::string(q) + " " + id + " --json", as_).out;
    const std::string pprof = dir_ / "out.pb.gz";
    daemon_.Ctl("export " + id + " -o " + pprof, as_);
    all += Sh("go tool pprof -raw " + pprof).out;
    all += BoltExport(id);
    return all;
  }
  // The user's `pathctl export --format bolt` of the session: the fdata written, or pathctl's
  // message when it wrote none.
  std::string BoltExport(const std::string& id, const std::string& name = "out.fdata") {
    const std::string out = dir_ / name;
    Sh("rm -f " + out);
    auto r = daemon_.Ctl("export --format bolt " + id + " -o " + out, as_);
    std::ifstream fdata(out);
    return r.rc == 0 ? std::string(std::istreambuf_iterator<char>(fdata), {}) : r.out;
  }
  // Waits (up to 30 s) until the session holds branch windows to export.
  // Until the session holds `enough` branch windows: one window can hold a single branch of
  // warm() alone (seen on a loaded host), where the checks below look for hot() too.
  void WaitForWindows(const std::string& id, long enough = 20) {
    long windows = 0;
    for (int i = 0; i < 120; ++i) {
      auto r =
          daemon_.Ctl("export --format perf-lbr --json " + id + " -o " + dir_ / "out.data", as_);
      std::smatch m;
      if (std::regex_search(r.out, m, std::regex("\"windows\":\\s*\"?([0-9]+)")))
        windows = std::stol(m[1]);
      if (windows >= enough) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ADD_FAILURE() << "session " << id << " holds " << windows << " branch windows after 30 s";
  }

  std::string as_ = EnsureTestUser();
  UserDir dir_;
  Daemon daemon_{"", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"}};
};

// Attack 1: the path of a mapped file made a symlink to a 1 TiB sparse file. The daemon used to
// read the whole file and die of bad_alloc; it reads the mapped file instead.
TEST_F(HostileUser, SymlinkToASparseTebibyteFileIsNeverRead) {
  const std::string huge = dir_ / "huge";
  Sh(as_ + "truncate -s 1T " + huge);
  auto loop = LoopBehindSymlink(dir_, huge);
  const std::string id = StartAndWait(loop->pid());
  const std::string all = AllReplies(id);
  EXPECT_NE(all.find("\"hot\""), std::string::npos) << all.substr(0, 3000);  // still named
  // The process gone, only the path is left: it names another inode and is not read either.
  loop.reset();
  AllReplies(id);
  ASSERT_TRUE(daemon_.Alive()) << daemon_.Log();
  ExpectRootServedWithinASecond(daemon_);
  EXPECT_LT(RssMiB(daemon_.pid()), 400) << "daemon RSS in MiB";
}

// Attack 2a: the same symlink to a root-only binary: its symbols must not reach the user.
TEST_F(HostileUser, SymlinkToARootOnlyBinaryIsNotSymbolized) {
  RootOnlyBinary secret;
  ASSERT_TRUE(secret.built());
  auto loop = LoopBehindSymlink(dir_, secret.path());
  const std::string id = StartAndWait(loop->pid());
  std::string all = AllReplies(id);
  EXPECT_NE(all.find("\"hot\""), std::string::npos) << all.substr(0, 3000);
  // BOLT's export names the user's own file's functions (it reads the mapped file too).
  WaitForWindows(id);
  const std::string fdata = BoltExport(id);
  EXPECT_NE(fdata.find(" hot "), std::string::npos) << fdata.substr(0, 3000);
  all += fdata;
  loop.reset();  // the path fallback too
  all += AllReplies(id);
  EXPECT_EQ(all.find(RootOnlyBinary::kMarker), std::string::npos)
      << "root-only symbols leaked: " << Around(all, RootOnlyBinary::kMarker);
}

// Attack 2b: a bind mount of the root-only binary over the target's file inside the user's own
// `unshare -Urm` namespace, where the daemon used to read /proc/PID/root/PATH.
TEST_F(HostileUser, BindMountInTheUsersNamespaceIsNotSymbolized) {
  RootOnlyBinary secret;
  ASSERT_TRUE(secret.built());
  if (Sh(as_ + "unshare -Urm true").rc != 0)
    GTEST_SKIP() << "unprivileged user namespaces are off on this host";
  Sh("cp " + kBin + "/example_hotloop " + dir_ / "prog" + " && chown " + kTestUser + " " +
     dir_ / "prog");
  // The loop runs without capabilities (an empty bounding set: no privilege beyond the user's),
  // and once it runs the user's namespace mounts the secret over its file.
  const std::string script = "setpriv --bounding-set=-all --inh-caps=-all " + dir_ / "prog" +
                             " 0 & sleep 0.5; mount --bind " + secret.path() + " " + dir_ / "prog" +
                             "; wait";
  UserProcess ns({"/usr/bin/unshare", "-Urm", "sh", "-c", script});
  pid_t loop = 0;
  for (int i = 0; i < 300 && loop == 0; ++i) {
    loop = std::atoi(Sh("pgrep -P " + std::to_string(ns.pid()) + " -x prog").out.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(loop, 0);
  struct KillLoop {  // the loop is the namespace shell's child: ended by pid as well
    pid_t pid;
    ~KillLoop() { kill(pid, SIGKILL); }
  } kill_loop{loop};
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the mount is made
  ASSERT_NE(Sh("cat /proc/" + std::to_string(loop) + "/mountinfo").out.find(dir_ / "prog"),
            std::string::npos);
  const std::string id = StartAndWait(loop);
  WaitForWindows(id);
  const std::string fdata = BoltExport(id);
  EXPECT_NE(fdata.find(" hot "), std::string::npos) << fdata.substr(0, 3000);
  const std::string all = fdata + AllReplies(id);
  EXPECT_NE(all.find("\"hot\""), std::string::npos) << all.substr(0, 3000);
  EXPECT_EQ(all.find(RootOnlyBinary::kMarker), std::string::npos)
      << "root-only symbols leaked: " << Around(all, RootOnlyBinary::kMarker);
}

// Attack 2c: the user's own hot loop padded to a 1000 MiB sparse ELF (a hole after its last
// section: it runs as before), exported as BOLT by eight clients at once. Each export used to
// read the whole file (8 GiB for eight); they now take the image as every query does, where
// a file above limits.max_image_bytes is refused unread and one below is read once, shared.
TEST_F(HostileUser, EightBoltExportsOfASparseElfKeepTheDaemonSmall) {
  Sh("cp " + kBin + "/example_hotloop " + dir_ / "prog" + " && truncate -s 1000M " + dir_ / "prog" +
     " && chown " + kTestUser + " " + dir_ / "prog");
  UserProcess loop({dir_ / "prog", "0"});
  ASSERT_TRUE(loop.Ready("prog"));
  const std::string id = StartAndWait(loop.pid());
  WaitForWindows(id);
  // The peak resident size from here on (writing 5 to clear_refs resets VmHWM).
  const long before = RssMiB(daemon_.pid());
  ASSERT_TRUE(static_cast<bool>(
      std::ofstream(procfs::Procfs::Host().Path(daemon_.pid(), "clear_refs")) << "5"));
  std::vector<std::thread> exports;
  std::vector<std::string> answers(8);
  for (size_t i = 0; i < answers.size(); ++i)
    exports.emplace_back([&, i] { answers[i] = BoltExport(id, "out" + std::to_string(i)); });
  for (auto& t : exports) t.join();
  const long peak = StatusMiB(daemon_.pid(), "VmHWM");
  std::printf("eight BOLT exports of a 1000 MiB sparse ELF: daemon RSS %ld MiB before, peak %ld\n",
              before, peak);
  EXPECT_LT(peak - before, 200) << "daemon peak RSS grew in MiB; first answer: " << answers[0];
  for (const std::string& a : answers)  // refused, and saying why
    EXPECT_NE(a.find("limits.max_image_bytes"), std::string::npos) << a;
  ASSERT_TRUE(daemon_.Alive()) << daemon_.Log();
  ExpectRootServedWithinASecond(daemon_);
}

// Attack 3: 20,000 idle connections from one user. Root is still served within a second, the
// daemon's descriptors and memory stay bounded, and idle connections are closed.
TEST(HostileConnections, TwentyThousandIdleConnectionsDoNotLockRootOut) {
  const std::string as = EnsureTestUser();
  Daemon d("[limits]\nidle_connection_timeout_s = 3\n",
           {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  const long rss_before = RssMiB(d.pid());
  // The user's clients: two processes (one would pass this host's fd limit of 20,000) each
  // connect 10,000 times, every connect bounded, then hold every connection they got.
  const std::string script =
      "import socket, sys, time\n"
      "held = []\n"
      "for i in range(10000):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    s.settimeout(0.2)\n"
      "    try:\n"
      "        s.connect(sys.argv[1]); held.append(s)\n"
      "    except OSError:\n"
      "        s.close()\n"
      "print('connected', len(held), flush=True)\n"
      "time.sleep(120)\n";
  std::ofstream(d.dir() + "/flood.py") << script;
  std::vector<pid_t> floods;
  for (int i = 0; i < 2; ++i)
    floods.push_back(Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                            std::string("--regid=") + kTestGroup, "--clear-groups",
                            "/usr/bin/python3", d.dir() + "/flood.py", d.socket()},
                           d.dir() + "/flood" + std::to_string(i) + ".log"));
  auto connected = [&] {
    for (int i = 0; i < 2; ++i) {
      std::ifstream in(d.dir() + "/flood" + std::to_string(i) + ".log");
      std::string line;
      if (!std::getline(in, line) || line.rfind("connected", 0) != 0) return false;
    }
    return true;
  };
  for (int i = 0; i < 1200 && !connected(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(connected()) << Sh("cat " + d.dir() + "/flood*.log").out;
  ExpectRootServedWithinASecond(d);
  const size_t fds = OpenFds(d.pid());
  EXPECT_LT(fds, 300u) << "the daemon holds the user's connections";
  EXPECT_LT(RssMiB(d.pid()) - rss_before, 100) << "RSS grew in MiB";
  // The connections it did take are closed once idle (3 s here).
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const size_t fds_idle = OpenFds(d.pid());
  std::printf("20,000 connects: %s; daemon fds %zu with them held, %zu after the idle timeout\n",
              Sh("cat " + d.dir() + "/flood*.log | tr '\\n' ' '").out.c_str(), fds, fds_idle);
  EXPECT_LT(fds_idle, fds) << "idle connections stayed open";
  ExpectRootServedWithinASecond(d);
  for (pid_t f : floods) {
    kill(f, SIGKILL);
    waitpid(f, nullptr, 0);
  }
}

// A full listen backlog: connecting is covered by --timeout (it used to block for minutes).
TEST(HostileConnections, ConnectingToAFullBacklogEndsAtTheTimeout) {
  char tmpl[] = "/tmp/pathprof-backlog-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/full.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 0), 0);  // never accepts
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {  // fill the backlog
    const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(c);
  }
  const auto start = Clock::now();
  auto r = Sh(kBin + "/pathctl ps --socket " + path + " --timeout 1s");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << r.out;
  for (int c : fillers) close(c);
  close(listener);
  Sh("rm -rf " + dir);
}

// Attack 4: starts whose 150 ms deadline passes on a loaded daemon leave no session behind.
TEST_F(HostileUser, StartsWhoseDeadlinePassedLeaveNoSession) {
  UserProcess loop({kBin + "/example_hotloop", "0"});
  ASSERT_TRUE(loop.Ready("example_hotloop"));
  std::vector<std::thread> starts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    starts.emplace_back([&] {
      if (daemon_.Ctl("start --pid " + std::to_string(loop.pid()) + " --timeout 150ms", as_).rc ==
          0)
        ++ok;
    });
  for (auto& t : starts) t.join();
  // A start still under way in the daemon ends within its own bound; then count.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto sessions = daemon_.Ctl("sessions --json");
  const std::regex name("\"name\":\"sessions/");
  const auto held = std::distance(
      std::sregex_iterator(sessions.out.begin(), sessions.out.end(), name), std::sregex_iterator());
  EXPECT_EQ(held, ok.load()) << "every session must be one a client was told about: "
                             << sessions.out;
}

// The code an admin's tracer interprets is a user's: with [ptrace] tracer_as_target the tracer
// of that user's process runs as the user (an exploit of the emulator gains nothing), while it
// takes windows as before.
TEST(HostileCode, AnAdminsTracerOfAUsersProcessRunsAsThatUserWhenConfigured) {
  EnsureTestUser();
  Daemon d("[ptrace]\ntracer_as_target = true\n");
  ASSERT_TRUE(d.Ready()) << d.Log();
  const pid_t loop = Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                            std::string("--regid=") + kTestGroup, "--clear-groups",
                            kBin + "/example_hotloop", "0"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto started = d.Ctl("start --pid " + std::to_string(loop) + " --source ptrace");
  ASSERT_EQ(started.rc, 0) << started.out << d.Log();
  const passwd* user = getpwnam(kTestUser);
  ASSERT_NE(user, nullptr);
  std::string tracer_uid;
  for (int i = 0; i < 100 && tracer_uid.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto status = procfs::Procfs::Host().Read(loop, "status");
    if (!status.ok()) break;
    const auto tracer = procfs::StatusField(*status, "TracerPid");
    if (!tracer || *tracer == "0") continue;
    auto tracer_status =
        procfs::Procfs::Host().Read(std::atoi(std::string(*tracer).c_str()), "status");
    if (!tracer_status.ok()) continue;
    const auto uid = procfs::StatusField(*tracer_status, "Uid");
    if (uid) tracer_uid = std::string(uid->substr(0, uid->find_first_of(" \t")));
  }
  EXPECT_EQ(tracer_uid, std::to_string(user->pw_uid)) << d.Log();
  // And it takes windows as that user.
  uint64_t windows = 0;
  for (int i = 0; i < 50 && windows == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string out = d.Ctl("stats " + FirstLine(started.out) + " --json").out;
    std::smatch m;
    if (std::regex_search(out, m, std::regex("\"windows\":\\s*\"?([0-9]+)")))
      windows = std::stoull(m[1].str());
  }
  EXPECT_GT(windows, 0u);
  kill(loop, SIGKILL);
  waitpid(loop, nullptr, 0);
}

// Attack 5: one user's sessions cannot fill the non-admins' memory and refuse the next user.
TEST(HostileMemory, OneUserCannotTakeTheWholePool) {
  const std::string as = EnsureTestUser();
  const std::string as2 = EnsureSecondTestUser();
  const char* second = kSecondTestUser;
  Daemon d("", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  pid_t first_sleep =
      Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
             std::string("--regid=") + kTestGroup, "--clear-groups", "/bin/sleep", "120"});
  pid_t second_sleep =
      Spawn({"/usr/bin/setpriv", std::string("--reuid=") + second,
             std::string("--regid=") + kTestGroup, "--clear-groups", "/bin/sleep", "120"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int started = 0;
  std::string refusal;
  for (int i = 0; i < 7; ++i) {
    auto r = d.Ctl("start --pid " + std::to_string(first_sleep), as);
    if (r.rc == 0)
      ++started;
    else
      refusal = r.out;
  }
  EXPECT_GE(started, 1);
  EXPECT_NE(refusal.find("limits.client_memory_share"), std::string::npos) << refusal;
  auto other = d.Ctl("start --pid " + std::to_string(second_sleep), as2);
  EXPECT_EQ(other.rc, 0) << "the second user was refused: " << other.out;
  for (pid_t p : {first_sleep, second_sleep}) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
}

// Attack 6: a target that execs itself in a loop for 60 s: the daemon's memory and CPU stay flat.
// The settling stays 15 s: cut to 5 s, the daemon's RSS was still rising from its start-up
// (153 -> 176 MiB between 5 and 15 s on a 2-core PVM guest), which the bound read as growth.
// The suite measures 10 s of the loop (it runs alone, so every second of it is the suite's
// wall time), `make check-figures` the minute's remaining 45 s: the fault this catches (the old
// image's mappings kept at each exec) takes a whole core from the start, where a sound daemon
// takes a tenth of one, so 10 s show it through the CPU bound; the memory bound is the minute's.
TEST(HostileExec, ExecLoopForAMinuteKeepsTheDaemonFlat) {
  const int settle_s = 15;
  const int measured_s = ::pathprof::testing::FiguresOr(45, 10);
  // AddressSanitizer holds freed memory back (256 MiB by default) before reusing it, which
  // reads as growth here: a small quarantine leaves only what the daemon really keeps.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan != nullptr ? asan : "";
  setenv("ASAN_OPTIONS",
         (saved + ":quarantine_size_mb=8:thread_local_quarantine_size_kb=64").c_str(), 1);
  Daemon d;
  setenv("ASAN_OPTIONS", saved.c_str(), 1);
  ASSERT_TRUE(d.Ready()) << d.Log();
  char tmpl[] = "/tmp/pathprof-execloop-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/loop.sh") << "#!/bin/sh\nexec " << dir << "/loop.sh\n";
  chmod((dir + "/loop.sh").c_str(), 0755);
  pid_t loop = Spawn({dir + "/loop.sh"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto started = d.Ctl("start --pid " + std::to_string(loop));
  ASSERT_EQ(started.rc, 0) << started.out << d.Log();
  auto cpu_s = [&] {
    auto stat = procfs::Procfs::Host().ReadStat(d.pid());
    if (!stat.ok()) return 0.0;
    return static_cast<double>(stat->utime_ticks + stat->stime_ticks) /
           static_cast<double>(sysconf(_SC_CLK_TCK));
  };
  // The daemon reads the kernel's symbol table once, when a query first shows kernel frames (or
  // a store has met 1,024 kernel addresses): 15-20 MiB in this build, which would read as growth
  // if it came inside the measured minute. A re-rooted tree query makes it come while settling
  // (whatever it answers: the shell's loop may hold no `main` at that moment).
  std::this_thread::sleep_for(std::chrono::seconds(settle_s / 3));
  (void)d.Ctl("tree " + FirstLine(started.out) + " --root main --depth 1");
  std::this_thread::sleep_for(std::chrono::seconds(settle_s - settle_s / 3));
  const long rss_settled = RssMiB(d.pid());
  const double cpu_settled = cpu_s();
  std::this_thread::sleep_for(std::chrono::seconds(measured_s));
  const long rss_end = RssMiB(d.pid());
  const double cpu_end = cpu_s();
  auto stats = d.Ctl("stats " + FirstLine(started.out) + " --json");
  std::printf(
      "exec loop: daemon RSS %ld MiB at %d s, %ld MiB at %d s; CPU %.1f%% of a core "
      "from %d to %d s\n",
      rss_settled, settle_s, rss_end, settle_s + measured_s,
      100 * (cpu_end - cpu_settled) / measured_s, settle_s, settle_s + measured_s);
  EXPECT_LE(rss_end - rss_settled, 16) << "RSS grew in MiB under the exec loop; " << stats.out;
  // CPU is bounded too: 9-10% of a core here. With the old image's mappings kept beside the
  // new one's at every exec (the fault this checks), 99% of a core and 18 MiB.
  EXPECT_LE(100 * (cpu_end - cpu_settled) / measured_s, 50.0)
      << "the daemon's CPU under the exec loop, percent of a core; " << stats.out;
  ASSERT_TRUE(d.Alive());
  ExpectRootServedWithinASecond(d);
  kill(loop, SIGKILL);
  waitpid(loop, nullptr, 0);
  Sh("rm -rf " + dir);
}

// Attack 7: /metrics answers anyone on its port: no session ids or pids unless configured.
TEST(HostileMetrics, MetricsNameNoSessionOrPidUnlessAnAdminAsks) {
  for (bool per_session : {false, true}) {
    Daemon d(std::string("[metrics]\naddress = \"127.0.0.1:0\"\nper_session = ") +
             (per_session ? "true" : "false") + "\n");
    ASSERT_TRUE(d.Ready()) << d.Log();
    HotLoop loop;
    ASSERT_EQ(d.Ctl("start --pid " + std::to_string(loop.pid()) + " --source none").rc, 0);
    std::smatch port;
    const std::string log = d.Log();
    ASSERT_TRUE(std::regex_search(log, port, std::regex("\\(port ([0-9]+)\\)"))) << log;
    const std::string metrics = Sh("curl -s http://127.0.0.1:" + port[1].str() + "/metrics").out;
    ASSERT_NE(metrics.find("pathprofd_target_windows_total"), std::string::npos) << metrics;
    EXPECT_EQ(metrics.find("session=\"") != std::string::npos, per_session) << metrics;
    EXPECT_EQ(metrics.find("pid=\"" + std::to_string(loop.pid())) != std::string::npos, per_session)
        << metrics;
  }
}

}  // namespace
}  // namespace pathprof::daemon::testing
