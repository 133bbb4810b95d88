// pathprofd under operations: clients that vanish, targets that exit, SIGTERM, SIGHUP, and
// a real Prometheus server scraping /metrics.
#include <gtest/gtest.h>

#include <regex>

#include "common/kernel_objects.h"
#include "daemon_harness.h"
#include "pathprof/core/procfs.h"

namespace pathprof::daemon::testing {
namespace {

std::string StartOn(const Daemon& d, pid_t pid, const std::string& extra = "") {
  auto r = d.Ctl("start --pid " + std::to_string(pid) + " " + extra);
  EXPECT_EQ(r.rc, 0) << r.out << d.Log();
  return FirstLine(r.out);
}

std::string ProcStatusField(pid_t pid, const std::string& field) {
  auto text = procfs::Procfs::Host().Read(pid, "status");
  if (!text.ok()) return "";
  const auto value = procfs::StatusField(*text, field);
  return value ? std::string(*value) : "";
}

TEST(DaemonOps, SurvivesClientDisconnectMidStreamAndTargetExit) {
  Daemon d;
  ASSERT_TRUE(d.Ready()) << d.Log();
  HotLoop loop;
  std::string id = StartOn(d, loop.pid());
  // A watcher killed mid-stream (no goodbye at all).
  pid_t watcher =
      Spawn({kBin + "/pathctl", "watch", id, "--interval", "100", "--socket", d.socket()},
            d.dir() + "/watch.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  kill(watcher, SIGKILL);
  waitpid(watcher, nullptr, 0);
  // The stream is released once the daemon notices (its next write fails).
  bool released = false;
  for (int i = 0; i < 60 && !released; ++i) {
    released = d.Ctl("stats --json").out.find("\"streams\":0") != std::string::npos;
    if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(released) << d.Ctl("stats --json").out;
  // A watcher that stops after two reports cancels cleanly.
  auto two = d.Ctl("watch " + id + " --interval 100 --count 2 --json");
  EXPECT_EQ(two.rc, 0) << two.out;
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 2) << two.out;

  // The target exits mid-session: the session says so, and its profile stays readable.
  loop.Kill();
  bool exited = false;
  for (int i = 0; i < 100 && !exited; ++i) {
    exited = d.Ctl("sessions --json").out.find("\"state\":\"SESSION_STATE_TARGET_EXITED\"") !=
             std::string::npos;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(exited) << d.Ctl("sessions").out;
  auto paths = d.Ctl("paths " + id + " --json");
  EXPECT_EQ(paths.rc, 0) << paths.out;
  EXPECT_TRUE(d.Alive());
  EXPECT_EQ(d.Ctl("caps").rc, 0);
}

// Stack sessions share the daemon's one eBPF sampler: six sessions on two processes, one at
// 499 Hz, hold one perf event per CPU and one ring buffer in all (a sampler each held six of
// both), and each gets its own process's samples at its own rate.
TEST(DaemonOps, StackSessionsShareTheDaemonsOneSampler) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  Daemon d;
  HotLoop a, b;
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i)
    ids.push_back(StartOn(d, i % 2 == 0 ? a.pid() : b.pid(),
                          i == 0 ? "--source none -F 499" : "--source none"));
  const auto open = ::pathprof::testing::CountOpenKernelObjects(d.pid());
  EXPECT_EQ(open.perf_events, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(open.ring_buffers, 1);
  std::this_thread::sleep_for(std::chrono::seconds(6));
  for (const std::string& id : ids) EXPECT_EQ(d.Ctl("stop " + id).rc, 0);
  std::vector<double> samples;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto r = d.Ctl("stats " + ids[i] + " --json");
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(r.out, m, std::regex(R"re("pid":(\d+),"stack_samples":"(\d+)")re")))
        << r.out;
    EXPECT_EQ(std::stoi(m[1]), i % 2 == 0 ? a.pid() : b.pid()) << r.out;
    samples.push_back(std::stod(m[2]));
    EXPECT_GT(samples.back(), 100) << r.out;
  }
  // Session 0 at 499 Hz against session 2 at 99 Hz on the same process, started up to a second
  // later (sanitizer builds start pathctl slowly): about five times as many.
  EXPECT_GT(samples[0] / samples[2], 3.5) << samples[0] << " against " << samples[2];
  EXPECT_LT(samples[0] / samples[2], 8.0) << samples[0] << " against " << samples[2];
}

TEST(DaemonOps, SigtermStopsSessionsAndReleasesTracees) {
  Daemon d;
  ASSERT_TRUE(d.Ready()) << d.Log();
  HotLoop loop;
  StartOn(d, loop.pid(), "--source ptrace");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_NE(ProcStatusField(loop.pid(), "TracerPid"), "0");  // seized while profiling
  int st = d.Signal(SIGTERM);
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st << "\n" << d.Log();
  EXPECT_EQ(WEXITSTATUS(st), 0) << d.Log();
  struct stat sb;
  EXPECT_NE(stat(d.socket().c_str(), &sb), 0);  // the socket is removed
  EXPECT_EQ(ProcStatusField(loop.pid(), "TracerPid"), "0");
  std::string state = ProcStatusField(loop.pid(), "State");
  EXPECT_EQ(state[0], 'R') << state;  // running, not left stopped
  EXPECT_NE(d.Log().find("<5>pathprofd stopped (1 session(s) stopped)"), std::string::npos)
      << d.Log();
}

TEST(DaemonOps, SighupReloadsLimitsAndKeepsOldConfigOnError) {
  Daemon d("[limits]\nmax_top_k = 1000\n");
  ASSERT_TRUE(d.Ready()) << d.Log();
  HotLoop loop;
  std::string id = StartOn(d, loop.pid(), "--stack-hz 0");
  EXPECT_NE(d.Ctl("paths " + id + " --top 10").rc, 2);
  d.WriteConfig("[limits]\nmax_top_k = 5\n");
  d.Signal(SIGHUP, false);
  for (int i = 0; i < 100 && d.Log().find("config reloaded") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = d.Ctl("paths " + id + " --top 10");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("server maximum 5"), std::string::npos) << r.out;
  // A broken file keeps the running config and says why.
  d.WriteConfig("[limits]\nmax_top_k = \"lots\"\n");
  d.Signal(SIGHUP, false);
  for (int i = 0; i < 100 && d.Log().find("reload failed") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(d.Log().find("<3>reload failed, keeping the old config"), std::string::npos) << d.Log();
  EXPECT_NE(d.Ctl("paths " + id + " --top 5").rc, 2);
  EXPECT_TRUE(d.Alive());
}

TEST(DaemonOps, PrometheusScrapesMetrics) {
  if (Sh("command -v prometheus").rc != 0) GTEST_SKIP() << "prometheus not installed";
  // Per-process series (labelled with the pid read back below) are an admin's opt-in.
  Daemon d("[metrics]\nper_session = true\n", {"--metrics", "127.0.0.1:0"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  std::smatch m;
  std::string log = d.Log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex("\\(port (\\d+)\\)"))) << log;
  std::string port = m[1];
  HotLoop loop;
  StartOn(d, loop.pid());
  auto text = Sh("curl -s http://127.0.0.1:" + port + "/metrics");
  EXPECT_NE(text.out.find("pathprofd_up 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("pathprofd_sessions{state=\"running\"} 1"), std::string::npos);

  std::string prom_port = std::to_string(20000 + getpid() % 20000);
  std::ofstream(d.dir() + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pathprofd\n"
         "    static_configs:\n      - targets: ['127.0.0.1:" +
             port + "']\n";
  pid_t prom = Spawn(
      {"/usr/bin/prometheus", "--config.file=" + d.dir() + "/prometheus.yml",
       "--storage.tsdb.path=" + d.dir() + "/tsdb", "--web.listen-address=127.0.0.1:" + prom_port},
      d.dir() + "/prometheus.log");
  // `up` is 1 only when Prometheus fetched and parsed the exposition; then read a target metric.
  std::string up, windows;
  for (int i = 0; i < 150; ++i) {
    std::string api = "curl -s -G http://127.0.0.1:" + prom_port + "/api/v1/query ";
    up = Sh(api + "--data-urlencode 'query=up{job=\"pathprofd\"}'").out;
    windows = Sh(api + "--data-urlencode query=pathprofd_target_windows_total").out;
    if (up.find("\"1\"]") != std::string::npos &&
        windows.find("\"pid\":\"" + std::to_string(loop.pid())) != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  kill(prom, SIGTERM);
  waitpid(prom, nullptr, 0);
  EXPECT_NE(up.find("\"1\"]"), std::string::npos) << up;
  EXPECT_NE(windows.find("\"pid\":\"" + std::to_string(loop.pid()) + "\""), std::string::npos)
      << windows;
}

}  // namespace
}  // namespace pathprof::daemon::testing
