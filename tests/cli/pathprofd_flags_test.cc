// pathctl's list of commands, exit codes and version; what every flag of pathprofd does (each
// flag in its --help has a case showing its effect); pathtop's --help and unknown flags. The
// helpers and the cases of pathctl's flags are beside it (flag_effects_util.h,
// flag_effects_test.cc).
#include <gtest/gtest.h>

#include "cli/flag_effects_util.h"

namespace {

using namespace flag_effects;

TEST(EveryFlag, PathctlListsItsCommandsExitCodesAndVersion) {
  const R help = Ctl("--help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_GE(Commands().size(), 20u) << help.out;
  // The exit codes of command.h, in the help.
  for (const char* code : {"  0  success", "  2  usage error", "  3  ran, but found nothing",
                           "  4  no daemon", "  5  refused", "  6  no such process",
                           "  7  the socket is there", "  8  the daemon did not answer"})
    EXPECT_TRUE(Has(help.out, code)) << code << "\n" << help.out;
  for (const char* v : {"--version", "-V", "version"}) {
    const R r = Ctl(v);
    EXPECT_EQ(r.rc, 0) << v;
    EXPECT_EQ(r.out.rfind("pathctl ", 0), 0u) << v << ": " << r.out;
  }
  const R none = Ctl("");
  EXPECT_EQ(none.rc, 2);
  const R bogus = Ctl("frobnicate");
  EXPECT_EQ(bogus.rc, 2);
  EXPECT_TRUE(Has(bogus.err, "frobnicate")) << bogus.err;
}

// ---------------------------------------------------------------- pathprofd and pathtop

// pathprofd in the foreground, for the flags that make it exit (help, bad flags, TLS files it
// cannot read); `timeout` ends one that serves after all, so the test fails instead of hanging.
R Daemond(const std::string& args) {
  return Shell("timeout -s KILL 30 " + kBin + "/pathprofd " + args);
}

// Starts pathprofd with `flags` on its own socket; waits for its socket or its exit (30 s).
struct OwnDaemon {
  std::string dir, sock, log;
  pid_t pid = -1;
  int exit_status = -1;
  explicit OwnDaemon(const std::string& flags) {
    char tmpl[] = "/tmp/every-flag-d-XXXXXX";
    dir = mkdtemp(tmpl);
    chmod(dir.c_str(), 0755);
    sock = dir + "/d.sock";
    log = dir + "/d.log";
    std::vector<std::string> argv = {kBin + "/pathprofd", "--config", "/dev/null", "--socket",
                                     sock};
    std::istringstream in(flags);
    for (std::string w; in >> w;) argv.push_back(w);
    pid = pathprof::daemon::testing::Spawn(argv, log);
    for (int i = 0; i < 600; ++i) {
      int st = 0;
      if (waitpid(pid, &st, WNOHANG) == pid) {
        exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        pid = -1;
        break;
      }
      struct stat s {};
      if (stat(sock.c_str(), &s) == 0 && Ctl("sessions --socket " + sock).rc != 4) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~OwnDaemon() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    fs::remove_all(dir);
  }
  std::string Log() const { return ReadFile(log); }
  R Ctl(const std::string& args) const { return ::Ctl(args + " --socket " + sock); }
};

std::map<std::string, Check> DaemonCases() {
  std::map<std::string, Check> t;
  t["config"] = [] {
    const std::string bad = Tmp("bad.toml");
    std::ofstream(bad) << "[limits]\nno_such_key = 1\n";
    const R r = Daemond("--config " + bad + " --socket " + Tmp("never.sock"));
    EXPECT_EQ(r.rc, 2) << Show("pathprofd --config", r);
    EXPECT_TRUE(Has(r.all(), bad)) << Show("pathprofd --config", r);
  };
  t["socket"] = [] {
    OwnDaemon d("");
    EXPECT_EQ(d.Ctl("sessions").rc, 3) << d.Log();
  };
  t["socket-group"] = [] {
    const group* g = getgrnam("nogroup");
    ASSERT_NE(g, nullptr);
    OwnDaemon d("--socket-group nogroup");
    struct stat s {};
    ASSERT_EQ(stat(d.sock.c_str(), &s), 0) << d.Log();
    EXPECT_EQ(s.st_gid, g->gr_gid) << d.Log();
  };
  t["tcp"] = [] {
    const R r = Daemond("--config /dev/null --socket " + Tmp("t.sock") + " --tcp 127.0.0.1:0");
    // A configuration that cannot work as given: a usage error (2), as a bad --config is.
    EXPECT_EQ(r.rc, 2) << Show("pathprofd --tcp without a certificate", r);
    EXPECT_TRUE(Has(r.all(), "tls")) << r.all();
  };
  t["tls-cert"] = [] {
    const R r = Daemond("--config /dev/null --socket " + Tmp("t.sock") +
                        " --tcp 127.0.0.1:0 --tls-cert /nonexistent/c.pem --tls-key /etc/hostname");
    EXPECT_EQ(r.rc, 1) << Show("pathprofd --tls-cert", r);
    EXPECT_TRUE(Has(r.all(), "/nonexistent/c.pem")) << r.all();
  };
  t["tls-key"] = [] {
    const R r = Daemond("--config /dev/null --socket " + Tmp("t.sock") +
                        " --tcp 127.0.0.1:0 --tls-cert /etc/hostname --tls-key /nonexistent/k.pem");
    EXPECT_EQ(r.rc, 1) << Show("pathprofd --tls-key", r);
    EXPECT_TRUE(Has(r.all(), "/nonexistent/k.pem")) << r.all();
  };
  t["tls-client-ca"] = [] {
    const R r = Daemond("--config /dev/null --socket " + Tmp("t.sock") +
                        " --tcp 127.0.0.1:0 --tls-cert /etc/hostname --tls-key /etc/hostname "
                        "--tls-client-ca /nonexistent/ca.pem");
    EXPECT_EQ(r.rc, 1) << Show("pathprofd --tls-client-ca", r);
    EXPECT_TRUE(Has(r.all(), "/nonexistent/ca.pem")) << r.all();
  };
  t["metrics"] = [] {
    OwnDaemon d("--log-level info --metrics 127.0.0.1:0");
    for (int i = 0; i < 200 && !Has(d.Log(), "serving on"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(Has(d.Log(), "metrics at http://127.0.0.1:0/metrics (port ")) << d.Log();
  };
  t["log-level"] = [] {
    OwnDaemon quiet("--log-level error");
    EXPECT_EQ(quiet.Ctl("sessions").rc, 3);
    EXPECT_FALSE(Has(quiet.Log(), "serving on")) << quiet.Log();
    OwnDaemon loud("--log-level notice");
    EXPECT_EQ(loud.Ctl("sessions").rc, 3);
    for (int i = 0; i < 200 && !Has(loud.Log(), "serving on"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(Has(loud.Log(), "serving on")) << loud.Log();
  };
  t["max-top-k"] = [] {
    OwnDaemon d("--max-top-k 3");
    const R s = d.Ctl("start -p " + Loop() + kCheap);
    ASSERT_EQ(s.rc, 0) << Show("start", s) << d.Log();
    const std::string id = s.out.substr(0, s.out.find('\n'));
    const R r = d.Ctl("paths " + id + " --top 5");
    EXPECT_EQ(r.rc, 2) << Show("paths --top 5 against --max-top-k 3", r);
    EXPECT_TRUE(Has(r.err, "max_top_k")) << r.err;
  };
  t["max-depth"] = [] {
    OwnDaemon d("--max-depth 3");
    const R s = d.Ctl("start -p " + Loop() + kCheap);
    ASSERT_EQ(s.rc, 0) << Show("start", s) << d.Log();
    const std::string id = s.out.substr(0, s.out.find('\n'));
    const R r = d.Ctl("tree " + id + " --depth 5");
    EXPECT_EQ(r.rc, 2) << Show("tree --depth 5 against --max-depth 3", r);
    EXPECT_TRUE(Has(r.err, "max_depth")) << r.err;
  };
  const auto second_start_refused = [](const std::string& flags) {
    OwnDaemon d(flags);
    const std::string loop = Loop();
    const R a = d.Ctl("start -p " + loop + kCheap);
    const R b = d.Ctl("start -p " + loop + kCheap);
    const R c = d.Ctl("start -p " + loop + kCheap);
    EXPECT_EQ(a.rc, 0) << Show("first start under " + flags, a) << d.Log();
    EXPECT_EQ(c.rc, 5) << Show("third start under " + flags, c) << Show("second", b);
  };
  t["max-sessions"] = [second_start_refused] {
    second_start_refused("--max-sessions 2 --admin-reserved-sessions 0");
  };
  // A client's cap is a non-admin's: an admin has its own (max-sessions-per-admin).
  t["max-sessions-per-client"] = [] {
    namespace dt = pathprof::daemon::testing;
    const std::string as = dt::EnsureTestUser();
    OwnDaemon d(std::string("--max-sessions-per-client 2 --socket-group ") + dt::kTestGroup);
    const pid_t loop = dt::Spawn({"/usr/bin/setpriv", std::string("--reuid=") + dt::kTestUser,
                                  std::string("--regid=") + dt::kTestGroup, "--clear-groups",
                                  kBin + "/example_hotloop", "0"});
    for (int i = 0; i < 200; ++i) {
      auto comm = pathprof::procfs::Procfs::Host().Comm(loop);
      if (comm.ok() && Has(*comm, "example_hotloop")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string start =
        as + kBin + "/pathctl start -p " + std::to_string(loop) + kCheap + " --socket " + d.sock;
    const R a = Shell(start), b = Shell(start), c = Shell(start);
    EXPECT_EQ(a.rc, 0) << Show("the user's first start", a) << d.Log();
    EXPECT_EQ(c.rc, 5) << Show("the user's third start", c) << Show("second", b);
    EXPECT_TRUE(Has(c.err, "limits.max_sessions_per_client")) << c.err;
    // Root, an admin, is not held to it.
    const R r1 = d.Ctl("start -p " + Loop() + kCheap), r2 = d.Ctl("start -p " + Loop() + kCheap),
            r3 = d.Ctl("start -p " + Loop() + kCheap);
    EXPECT_EQ(r3.rc, 0) << Show("root's third start", r3) << Show("first", r1)
                        << Show("second", r2);
    kill(loop, SIGKILL);
    waitpid(loop, nullptr, 0);
  };
  t["max-sessions-per-admin"] = [second_start_refused] {
    second_start_refused("--max-sessions-per-admin 2");
  };
  t["max-memory-bytes"] = [] {
    OwnDaemon d("--max-memory-bytes 4096");
    const R r = d.Ctl("start -p " + Loop() + kCheap);
    EXPECT_EQ(r.rc, 5) << Show("start under --max-memory-bytes 4096", r);
  };
  const auto second_watch_refused = [](const std::string& flags) {
    OwnDaemon d(flags);
    const R s = d.Ctl("start -p " + Loop() + kCheap);
    const std::string id = s.out.substr(0, s.out.find('\n'));
    // One watch held open (2 updates 5 s apart), a second one refused meanwhile. The second
    // starts only once the first has printed its first update (it holds the stream then):
    // started together, the second could take the one stream and the first be refused.
    const std::string first_out = d.dir + "/first.jsonl";
    const std::string held = kBin + "/pathctl watch " + id +
                             " --count 2 --interval 5s --json --socket " + d.sock + " >" +
                             first_out + " 2>&1 & echo $!";
    const R bg = Shell(held);
    for (int i = 0; i < 200 && ReadFile(first_out).find('\n') == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(Has(ReadFile(first_out), "\n")) << ReadFile(first_out) << d.Log();
    const R second = d.Ctl("watch " + id + " --count 1 --interval 100");
    EXPECT_EQ(second.rc, 5) << Show("second watch under " + flags, second);
    EXPECT_TRUE(Has(second.err, "too many watch streams")) << second.err;
    const pid_t p = static_cast<pid_t>(std::atoi(bg.out.c_str()));
    if (p > 0) kill(p, SIGKILL);
  };
  t["max-streams"] = [second_watch_refused] { second_watch_refused("--max-streams 1"); };
  t["max-streams-per-client"] = [second_watch_refused] {
    second_watch_refused("--max-streams-per-client 1");
  };
  const auto rate_limited = [](const std::string& flags) {
    OwnDaemon d(flags);
    R r;
    for (int i = 0; i < 20 && r.rc != 5; ++i) r = d.Ctl("sessions");
    EXPECT_EQ(r.rc, 5) << Show("sessions under " + flags, r);
    EXPECT_TRUE(Has(r.err, "limit")) << r.err;
  };
  t["rate-qps"] = [rate_limited] { rate_limited("--rate-qps 0.01 --rate-burst 2"); };
  t["rate-burst"] = [rate_limited] { rate_limited("--rate-burst 1 --rate-qps 0.01"); };
  return t;
}

// pathprofd --help and -h, --version, and unknown flags (long and short) refused naming them.
void PathprofdHelpAndUnknownFlags() {
  for (const char* h : {"--help", "-h"}) {
    const R r = Daemond(h);
    EXPECT_EQ(r.rc, 0) << Show(h, r);
    EXPECT_EQ(r.out.rfind("usage: pathprofd", 0), 0u) << r.out;
  }
  const R v = Daemond("--version");
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out.rfind("pathprofd ", 0), 0u) << v.out;
  const R bad = Daemond("--every-flag-bogus 1");
  EXPECT_EQ(bad.rc, 2) << Show("pathprofd --every-flag-bogus", bad);
  EXPECT_TRUE(Has(bad.all(), "--every-flag-bogus")) << bad.all();
  const R bad_short = Daemond("-Z");
  EXPECT_EQ(bad_short.rc, 2) << Show("pathprofd -Z", bad_short);
  EXPECT_TRUE(Has(bad_short.all(), "-Z")) << bad_short.all();
}

// pathprofd's flags in shards, each shard a test of its own: all of them in one test took 49 s
// in the sanitizer build (each case starts a daemon), near the suite's per-test limit
// (docs/performance.md, "Test-time budget"). Shard 0 checks the help and unknown flags too.
constexpr int kPathprofdShards = 3;
class PathprofdFlags : public ::testing::TestWithParam<int> {};

TEST_P(PathprofdFlags, HelpUnknownFlagsAndEveryFlagInItsHelp) {
  const int shard = GetParam();
  if (shard == 0) {
    PathprofdHelpAndUnknownFlags();
  }
  const auto cases = DaemonCases();
  std::map<std::string, Gap> gaps = {{"admin-group",
                                      {"--admin-group nogroup",
                                       "who is an admin shows only to a second user; "
                                       "tests/daemon/authorization_test covers it"}}};
  int index = 0;
  for (const std::string& flag : FlagsIn(Daemond("--help").out)) {
    if (index++ % kPathprofdShards != shard) continue;
    SCOPED_TRACE("pathprofd --" + flag);
    if (auto it = cases.find(flag); it != cases.end()) {
      it->second();
    } else if (auto g = gaps.find(flag); g != gaps.end()) {
      OwnDaemon d(g->second.args);
      EXPECT_EQ(d.exit_status, -1) << d.Log();
      std::printf("[ gap      ] pathprofd --%s: %s\n", flag.c_str(), g->second.why.c_str());
    } else {
      ADD_FAILURE() << "flag --" << flag << " of command pathprofd has no case";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFlag, PathprofdFlags, ::testing::Range(0, kPathprofdShards));

TEST(EveryFlag, PathtopHelpAndUnknownFlags) {
  for (const char* h : {"--help", "-h"}) {
    const R r = Shell(kBin + "/pathtop " + h);
    EXPECT_EQ(r.rc, 0) << Show(h, r);
    EXPECT_EQ(r.out.rfind("usage: pathtop", 0), 0u) << r.out;
  }
  const R bad = Shell(kBin + "/pathtop --every-flag-bogus 1");
  EXPECT_EQ(bad.rc, 2) << Show("pathtop --every-flag-bogus", bad);
  EXPECT_TRUE(Has(bad.all(), "--every-flag-bogus")) << bad.all();
}

}  // namespace
