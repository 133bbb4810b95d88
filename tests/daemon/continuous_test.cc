// Continuous mode: its [continuous] config, the series a config resolves to, and the real
// pathprofd rotating short windows into a bounded archive and pushing them to a fake Pyroscope.
#include <dirent.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <httplib.h>
#include <sys/stat.h>
#include <algorithm>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/proc_status.h"
#include "daemon_harness.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/procfs.h"
#include "pathprof/daemon/config.h"
#include "pathprof/daemon/continuous.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/profiles/pprof_import.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::daemon {
namespace {

using testing::Daemon;
using testing::HotLoop;
using testing::Sh;

TEST(ContinuousConfigTest, ReadsEveryKey) {
  auto c = ParseConfigText(R"(
[continuous]
enabled = true
window_s = 2
stack_hz = 49
source = "auto"
window_budget = 500
window_cpu_percent = 5
hybrid_stop_hz = 200
units = ["nginx.service"]
cgroups = ["/system.slice/db.service"]
executables = ["/usr/local/bin/example_hotloop"]
max_pids = 10
host = "web-1"
archive_dir = "/tmp/w"
keep_windows = 5
max_disk_bytes = 100000
archive_branch_events = 4096
push_queue = 4
push_attempts = 2
[continuous.pyroscope]
url = "http://127.0.0.1:4040"
app_name = "svc"
tenant_id = "t1"
[continuous.parca]
target = "127.0.0.1:7070"
use_tls = false
[continuous.otlp]
target = "127.0.0.1:4317"
use_tls = true
bearer_token = "tok"
include_pprof = true
)",
                           "test");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ContinuousConfig& k = c->continuous;
  EXPECT_TRUE(k.enabled);
  EXPECT_EQ(k.window_s, 2u);
  EXPECT_EQ(k.stack_hz, 49u);
  EXPECT_EQ(k.source, "auto");
  EXPECT_EQ(k.window_budget, 500u);
  EXPECT_EQ(k.window_cpu_percent, 5u);
  EXPECT_EQ(k.hybrid_stop_hz, 200u);
  EXPECT_EQ(k.units, std::vector<std::string>{"nginx.service"});
  EXPECT_EQ(k.cgroups, std::vector<std::string>{"/system.slice/db.service"});
  EXPECT_EQ(k.executables, std::vector<std::string>{"/usr/local/bin/example_hotloop"});
  EXPECT_EQ(k.max_pids, 10u);
  EXPECT_EQ(k.host, "web-1");
  EXPECT_EQ(k.keep_windows, 5u);
  EXPECT_EQ(k.max_disk_bytes, 100000u);
  EXPECT_EQ(k.archive_branch_events, 4096u);
  EXPECT_EQ(k.push_queue, 4u);
  EXPECT_EQ(k.push_attempts, 2u);
  EXPECT_EQ(k.pyroscope.url, "http://127.0.0.1:4040");
  EXPECT_EQ(k.pyroscope.app_name, "svc");
  EXPECT_EQ(k.pyroscope.tenant_id, "t1");
  EXPECT_EQ(k.parca.target, "127.0.0.1:7070");
  EXPECT_EQ(k.otlp.target, "127.0.0.1:4317");
  EXPECT_TRUE(k.otlp.use_tls);
  EXPECT_EQ(k.otlp.bearer_token, "tok");
  EXPECT_TRUE(k.otlp.include_pprof);
}

TEST(ContinuousConfigTest, DefaultsAreLowRateStacksOnly) {
  ContinuousConfig k;
  EXPECT_FALSE(k.enabled);
  EXPECT_EQ(k.window_s, 60u);
  EXPECT_EQ(k.stack_hz, 19u);
  EXPECT_EQ(k.source, "none");
}

TEST(ContinuousConfigTest, RefusesBadValuesNamingTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"window_s = 0", "continuous.window_s"},
      {"stack_hz = 5000", "continuous.stack_hz"},
      {"source = \"magic\"", "continuous.source"},
      {"source = \"ptrace\"", "continuous.source"},  // no selector: not on every process
      {"window_budget = -1", "continuous.window_budget"},
      {"window_cpu_percent = 101", "continuous.window_cpu_percent"},
      {"hybrid_stop_hz = 0", "continuous.hybrid_stop_hz"},
      {"cgroups = [\"relative\"]", "continuous.cgroups"},
      {"cgroups = [\"/a/../b\"]", "continuous.cgroups"},
      {"keep_windows = 0", "continuous.keep_windows"},
      {"max_disk_bytes = 10", "continuous.max_disk_bytes"},
      {"archive_dir = \"rel\"", "continuous.archive_dir"},
      {"units = \"nginx\"", "continuous.units"},
      // A name, which any user can give a program of their own: never a series.
      {"executables = [\"nginx\"]", "continuous.executables"},
      {"executables = [\"bin/nginx\"]", "continuous.executables"},
      {"executables = [\"/usr/sbin/../../tmp/nginx\"]", "continuous.executables"},
      {"typo = 1", "continuous.typo"},
  };
  for (const auto& [line, key] : cases) {
    auto c = ParseConfigText(std::string("[continuous]\n") + line + "\n", "test");
    ASSERT_FALSE(c.ok()) << line;
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  }
  // Snapshot windows stop nothing: the whole host may have them.
  EXPECT_TRUE(ParseConfigText("[continuous]\nsource = \"snapshot\"\n", "test").ok());
  // Hybrid stops a few processes whose snapshots fall short: naming it is the consent.
  EXPECT_TRUE(ParseConfigText("[continuous]\nsource = \"hybrid\"\n", "test").ok());
  auto host_wide_branches = ParseConfigText("[continuous]\nsource = \"auto\"\n", "test");
  ASSERT_FALSE(host_wide_branches.ok());
  EXPECT_NE(host_wide_branches.status().message().find("continuous.source"), std::string::npos);
  auto bad_url = ParseConfigText("[continuous.pyroscope]\nurl = \"ftp://x\"\n", "test");
  EXPECT_FALSE(bad_url.ok());
  auto bad_parca = ParseConfigText("[continuous.parca]\nport = 1\n", "test");
  ASSERT_FALSE(bad_parca.ok());
  EXPECT_NE(bad_parca.status().message().find("parca.port"), std::string::npos);
  // include_pprof is OTLP's alone.
  auto parca_payload = ParseConfigText("[continuous.parca]\ninclude_pprof = true\n", "test");
  ASSERT_FALSE(parca_payload.ok());
  EXPECT_NE(parca_payload.status().message().find("parca.include_pprof"), std::string::npos);
  auto bad_otlp = ParseConfigText("[continuous.otlp]\nuse_tls = \"yes\"\n", "test");
  ASSERT_FALSE(bad_otlp.ok());
  EXPECT_NE(bad_otlp.status().message().find("otlp.use_tls"), std::string::npos);
}

std::vector<ProcessEntry> FakeHost() {
  return {
      {1, 0, "systemd", "/usr/lib/systemd/systemd", "/init.scope"},
      {10, 0, "nginx", "/usr/sbin/nginx", "/system.slice/nginx.service"},
      {11, 33, "nginx", "/usr/sbin/nginx", "/system.slice/nginx.service"},
      {20, 0, "postgres", "/usr/bin/postgres", "/system.slice/db.service/main"},
      {21, 0, "sh", "/bin/sh", "/system.slice/db.service/helper"},
      {30, 1000, "hot", "/opt/bin/hot", "/user.slice/user-1000.slice/session-1.scope"},
  };
}

TEST(ResolveSeriesTest, NoSelectorMeansOneSeriesOfEveryProcess) {
  auto s = ResolveSeries(ContinuousConfig{}, FakeHost(), "h");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pids, (std::vector<uint32_t>{1, 10, 11, 20, 21, 30}));
  EXPECT_EQ(s[0].identity.host, "h");
  EXPECT_EQ(s[0].identity.executable, "");  // several executables: no label
  EXPECT_EQ(s[0].identity.cgroup, "");
}

TEST(ResolveSeriesTest, EachSelectorIsASeriesWithItsLabels) {
  ContinuousConfig c;
  c.units = {"nginx.service", "db.service", "absent.service"};
  c.cgroups = {"/system.slice/db.service"};
  c.executables = {"/opt/bin/hot"};
  auto s = ResolveSeries(c, FakeHost(), "h");
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].pids, (std::vector<uint32_t>{10, 11}));
  EXPECT_EQ(s[0].identity.unit, "nginx.service");
  EXPECT_EQ(s[0].identity.cgroup, "/system.slice/nginx.service");
  EXPECT_EQ(s[0].identity.executable, "/usr/sbin/nginx");
  EXPECT_EQ(s[1].pids, (std::vector<uint32_t>{20, 21}));  // the unit's sub-groups too
  EXPECT_EQ(s[1].identity.executable, "");
  EXPECT_TRUE(s[2].pids.empty());
  EXPECT_EQ(s[3].pids, (std::vector<uint32_t>{20, 21}));
  EXPECT_EQ(s[3].identity.cgroup, "/system.slice/db.service");
  EXPECT_EQ(s[3].identity.unit, "");
  EXPECT_EQ(s[4].pids, (std::vector<uint32_t>{30}));
  EXPECT_EQ(s[4].identity.executable, "/opt/bin/hot");
  auto labels = fleet::ToLabels(s[4].identity);
  ASSERT_GE(labels.size(), 3u);
  EXPECT_EQ(labels[0].name, "host");
}

// An executable series holds the processes running the file the admin named, not those whose
// comm or file name is the same: any user can call a program of their own "nginx".
TEST(ResolveSeriesTest, AnExecutableIsTheFileNotItsName) {
  std::vector<ProcessEntry> host = FakeHost();
  host.push_back({40, 1000, "nginx", "/home/u/nginx", "/user.slice/user-1000.slice"});
  host.push_back({41, 1000, "nginx", "/home/u/bin/httpd", "/user.slice/user-1000.slice"});
  host.push_back({42, 1000, "sh", "/home/u/usr/sbin/nginx", "/user.slice/user-1000.slice"});
  host.push_back({43, 0, "nginx", "/usr/sbin/nginx (deleted)", "/system.slice/nginx.service"});
  ContinuousConfig c;
  c.executables = {"/usr/sbin/nginx"};
  auto s = ResolveSeries(c, host, "h");
  ASSERT_EQ(s.size(), 1u);
  // The file replaced by an upgrade while it ran is still that executable.
  EXPECT_EQ(s[0].pids, (std::vector<uint32_t>{10, 11, 43}));
}

std::vector<std::string> ArchiveFiles(const std::string& dir, const std::string& suffix,
                                      uint64_t* bytes) {
  std::vector<std::string> out;
  *bytes = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      struct stat st;
      if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) *bytes += st.st_size;
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  return out;
}

// The path_count the profile's samples whose leaf is in a mapping of `file` carry (0 when the
// profile has no path_count: stacks only).
int64_t PathCountIn(const profiles::pprof::ImportedProfile& p, const std::string& file) {
  size_t column = p.sample_types.size();
  for (size_t i = 0; i < p.sample_types.size(); ++i)
    if (p.sample_types[i].type == "path_count") column = i;
  int64_t n = 0;
  for (const profiles::pprof::ImportedSample& s : p.samples) {
    if (column >= s.values.size() || s.locations.empty()) continue;
    const profiles::pprof::ImportedLocation& leaf = p.locations[s.locations.front()];
    if (leaf.mapping && p.mappings[*leaf.mapping].file.find(file) != std::string::npos)
      n += s.values[column];
  }
  return n;
}

// The tracer of `pid` (its status's TracerPid), -1 when unreadable.
int TracerOf(pid_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  return status.ok() ? status->tracer_pid : -1;
}

// Runs the daemon with 4 s windows, `source` and `selector` (a [continuous] line naming the
// process's executable, or nothing: the whole host), starts a copy of example_hotloop a second
// into the first window, and checks that the first window's archived profile names it; with
// source snapshot, that the window holds hot paths in it, and that nothing ever traced it.
pid_t EmulatorOf(pid_t daemon) {
  return pathprof::testing::ChildNamed(daemon, "pathprof-emulat");
}

// What a helper process may do: its uid, CapEff, NoNewPrivs and Seccomp lines.
std::string ConfinementOf(pid_t pid) {
  auto status = procfs::Procfs::Host().Read(pid, "status");
  if (!status.ok()) return "";
  std::string out;
  for (const char* key : {"Uid", "CapEff", "NoNewPrivs", "Seccomp"})
    out +=
        std::string(key) + "=" + std::string(procfs::StatusField(*status, key).value_or("?")) + " ";
  return out;
}

// The branch windows archived beside a window's pprof (`profile`, a .pb.gz): a recording that
// names the process born mid-window (`pid`, running `exe`) with the executable's build-id, whose
// hot paths pathctl finds in hot() and whose BOLT profile pathctl writes for `exe`, all from the
// archive alone: the process is gone by then.
void ExpectTheWindowsBranchesAnswerQueriesAndExports(const std::string& profile, pid_t pid,
                                                     const std::string& exe,
                                                     const std::string& work) {
  const std::string pbs = profile.substr(0, profile.size() - std::strlen(".pb.gz")) + ".pbs";
  auto recording = ReadPbsFile(pbs);
  ASSERT_TRUE(recording.ok()) << pbs << ": " << recording.status().ToString();
  size_t windows = 0;
  for (const BranchBatch& b : recording->batches) windows += b.pid == static_cast<uint32_t>(pid);
  EXPECT_GT(windows, 0u) << pbs << " has no window of the process born mid-window";
  auto elf = decoders::ElfImage::Open(exe);
  ASSERT_TRUE(elf.ok());
  bool named = false;
  for (const ImageRecord& img : recording->images) {
    if (img.pid != static_cast<uint32_t>(pid) || img.path.find(exe) == std::string::npos) continue;
    std::string hex;
    for (unsigned char c : img.build_id) {
      char two[3];
      std::snprintf(two, sizeof two, "%02x", c);
      hex += two;
    }
    EXPECT_EQ(hex, (*elf)->build_id()) << pbs;
    named = true;
  }
  EXPECT_TRUE(named) << pbs << " does not map " << exe << " for pid " << pid;
  const MetaRecord executable{"executable." + std::to_string(pid), exe};
  EXPECT_NE(std::find(recording->meta.begin(), recording->meta.end(), executable),
            recording->meta.end());
  // The window's labels and times go with it: the .pbs alone says what it is.
  std::map<std::string, std::string> meta;
  for (const MetaRecord& m : recording->meta) meta[m.key] = m.value;
  EXPECT_FALSE(meta["label.host"].empty());
  const std::string stem = profile.substr(profile.rfind('/') + 1);
  EXPECT_EQ(meta["start_unix_nanos"], std::to_string(std::stoll(stem.substr(0, 20))));
  // Hot paths from the archive alone: the process's, one in hot() among its three hottest (hot()'s
  // iterations are split over three paths, and warm()'s one path, whose iterations take about
  // twice as long, comes first in about half the runs: windows start at time samples). The
  // window holds the whole host, other tests' loops too: the three are this process's own.
  auto paths = Sh(testing::kBin + "/pathctl paths " + pbs + " --top 1000 --json");
  ASSERT_EQ(paths.rc, 0) << paths.out;
  v1::HotPaths hot_paths;
  const auto parsed = google::protobuf::util::JsonStringToMessage(paths.out, &hot_paths);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString() << " in: " << paths.out.substr(0, 400);
  int ranked = 0;
  bool hot_among_three = false;
  for (const v1::HotPath& path : hot_paths.paths()) {
    if (path.pid() != pid || ranked == 3) continue;
    ++ranked;
    hot_among_three |= path.start().function() == "hot";
  }
  EXPECT_GT(ranked, 0) << "no path of pid " << pid << " in: " << paths.out;
  EXPECT_TRUE(hot_among_three) << "pid " << pid
                               << "'s three hottest are not in hot(): " << paths.out;
  // BOLT's profile of the executable, from the archive alone: branches in hot().
  const std::string fdata = work + "/window.fdata";
  auto bolt = Sh(testing::kBin + "/pathctl export --format bolt " + pbs + " --binary " + exe +
                 " -o " + fdata);
  ASSERT_EQ(bolt.rc, 0) << bolt.out;
  EXPECT_GT(std::atoi(Sh("grep -c '^1 hot ' " + fdata).out.c_str()), 0) << Sh("head " + fdata).out;
}

void ExpectAProcessBornMidWindowInThatWindow(bool by_executable,
                                             const std::string& source = "none") {
  char tmpl[] = "/tmp/pathprof-midwindow-XXXXXX";
  const std::string work = mkdtemp(tmpl);
  const std::string name = "born" + std::to_string(getpid());
  const std::string exe = work + "/" + name;
  ASSERT_EQ(Sh("cp " + testing::kBin + "/example_hotloop " + exe).rc, 0);
  const std::string archive = work + "/windows";
  pid_t loop = -1, outsider = -1;
  int64_t born_ns = 0;
  std::string windows_log;
  {
    // window_cpu_percent 20, not the default 2: the share of one core that emulates the whole
    // host's windows is what this daemon's sanitizer build spends several times over per
    // window, shared by every process the suite runs beside it (a passing run's first window
    // cut 1,722 samples as snapshot_budget_cpu and took 68 windows; one run under a third load
    // left the born process none). The budget has its own test (whole_host_windows_test.cc).
    Daemon daemon(
        "[continuous]\nenabled = true\nwindow_s = 4\nstack_hz = 99\nwindow_cpu_percent = 20\n"
        "source = \"" +
        source + "\"\narchive_dir = \"" + archive + "\"\nkeep_windows = 10\n" +
        (by_executable ? "executables = [\"" + exe + "\"]\n" : ""));
    ASSERT_TRUE(daemon.Ready()) << daemon.Log();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    born_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    loop = testing::Spawn({exe, "0"});
    ASSERT_GT(loop, 0);
    uint64_t bytes = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int traced = 0;
    // A series' hybrid session beside a process outside it whose snapshot windows fall short
    // (python3's interpreter loop): it must never stop it (it did before, as it did the other
    // tests' processes).
    if (by_executable && source == "hybrid")
      outsider = testing::Spawn({"/usr/bin/python3", "-c", "while True: pass"});
    int outsider_traced = 0;
    std::string confinement;
    while (ArchiveFiles(archive, ".pb.gz", &bytes).empty() &&
           std::chrono::steady_clock::now() < deadline) {
      traced += TracerOf(loop) > 0;
      if (outsider > 0) outsider_traced += TracerOf(outsider) > 0;
      // Read until its filter is on: a helper read while it starts has dropped root but not yet
      // installed its filter (Seccomp=0 for a moment); one that never installs it stays so.
      if (confinement.find("Seccomp=2") == std::string::npos)
        if (const pid_t emulator = EmulatorOf(daemon.pid()); emulator > 0)
          confinement = ConfinementOf(emulator);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (source != "none") {
      EXPECT_EQ(traced, 0) << "the continuous session ptraced it";
      EXPECT_EQ(outsider_traced, 0) << "the series' session ptraced a process outside it";
      // The whole host's code is emulated by nobody, without capabilities, under a filter.
      EXPECT_EQ(confinement,
                "Uid=65534\t65534\t65534\t65534 CapEff=0000000000000000 NoNewPrivs=1 Seccomp=2 ")
          << "the daemon's emulator helper";
    }
    // The window's profile was symbolized: by libdw in the symbolizer helper, nobody, without
    // capabilities, under its filter (it lives on with the daemon).
    std::string symbolizer;
    for (int i = 0; i < 40 && symbolizer.find("Seccomp=2") == std::string::npos; ++i) {
      if (const pid_t helper = pathprof::testing::ChildNamed(daemon.pid(), "pathprof-symbol");
          helper > 0)
        symbolizer = ConfinementOf(helper);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(symbolizer,
              "Uid=65534\t65534\t65534\t65534 CapEff=0000000000000000 NoNewPrivs=1 Seccomp=2 ")
        << "the daemon's symbolizer helper";
    EXPECT_EQ(daemon.Signal(SIGTERM), 0) << daemon.Log();
    // Each window's line (its samples, windows and drops by reason), for a failure below.
    std::istringstream log(daemon.Log());
    for (std::string line; std::getline(log, line);)
      if (line.find("continuous: window of") != std::string::npos) windows_log += line + "\n";
  }
  kill(loop, SIGKILL);
  waitpid(loop, nullptr, 0);
  if (outsider > 0) {
    kill(outsider, SIGKILL);
    waitpid(outsider, nullptr, 0);
  }
  uint64_t bytes = 0;
  auto profiles = ArchiveFiles(archive, ".pb.gz", &bytes);
  ASSERT_FALSE(profiles.empty()) << "no window archived in 60 s";
  std::sort(profiles.begin(), profiles.end());  // named by start time, zero-padded
  const std::string first = profiles.front();
  const std::string stem = first.substr(first.rfind('/') + 1);
  const int64_t start_ns = std::stoll(stem.substr(0, 20));
  EXPECT_LT(start_ns, born_ns) << "the first window started after the process did";
  // The process's executable is a mapping of that window's profile (its string table).
  auto found = Sh("zcat " + first + " | grep -a -c " + name);
  EXPECT_GT(std::atoi(found.out.c_str()), 0) << first << " does not name " << exe;
  if (source != "none") {
    std::ifstream in(first, std::ios::binary);
    const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto profile = profiles::pprof::ImportProfile(gz);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    EXPECT_GT(PathCountIn(*profile, name), 0)
        << first << " has no hot path in " << exe << "; the daemon's windows:\n"
        << windows_log;
    ExpectTheWindowsBranchesAnswerQueriesAndExports(first, loop, exe, work);
  }
  // The executable's series is labelled with the executable that joined it, and with its
  // cgroup (the test's, which it inherited) where the host has cgroup v2: at the window's start
  // the series had no process, hence no cgroup of its own.
  if (by_executable) {
    EXPECT_NE(first.find("executable="), std::string::npos) << first;
    const auto cgroup = procfs::Procfs::Host().Cgroup(getpid());
    if (cgroup.ok() && !cgroup->empty()) {
      EXPECT_NE(first.find("cgroup="), std::string::npos) << first << ": not labelled " << *cgroup;
    }
  }
  Sh("rm -rf " + work);
}

// An executable's series, stacks only: a process born mid-window joins on its first sample
// (the series matched nothing at the window's start, and was skipped for that window before).
TEST(ContinuousDaemonTest, AProcessBornMidWindowJoinsItsExecutablesSeries) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  ExpectAProcessBornMidWindowInThatWindow(true);
}

// The whole host (no selector): one session over every process, each joining on its first
// sample, so a process started a second into a window is in that window's profile, not only
// from the next window on (the pid list of the window's start missed it). With source snapshot
// (windows from the stack samples' snapshots, which stop nothing) it has hot paths in that
// window too, and no thread of it is ever traced. (Stacks alone join the same way: the
// executable's series below runs with source none.)
TEST(ContinuousDaemonTest, AProcessBornMidWindowHasHotPathsInThatWindow) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  ExpectAProcessBornMidWindowInThatWindow(false, "snapshot");
}

// The same with source hybrid, which may stop a process whose snapshot windows end too early:
// the hot loop's hold its paths, so its windows are snapshot windows and it is never traced.
// The series is the hot loop's executable, not the whole host: a whole-host hybrid session
// stops whatever else runs with short snapshot windows, the other tests' processes too (it
// stopped the emulator's FastOps test, whose LeakSanitizer then could not run at its exit).
// A python3 loop beside it, outside the series, is never stopped either.
TEST(ContinuousDaemonTest, HybridNeverStopsAProcessWhoseSnapshotsSuffice) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  ExpectAProcessBornMidWindowInThatWindow(true, "hybrid");
}

namespace otlp_collector = opentelemetry::proto::collector::profiles::v1development;

// An OpenTelemetry collector's OTLP profiles receiver, as far as the daemon can tell: records
// every request it is sent.
class RecordingCollector final : public otlp_collector::ProfilesService::Service {
 public:
  grpc::Status Export(grpc::ServerContext*, const otlp_collector::ExportProfilesServiceRequest* r,
                      otlp_collector::ExportProfilesServiceResponse*) override {
    std::lock_guard<std::mutex> lock(mu);
    requests.push_back(*r);
    return grpc::Status::OK;
  }
  std::mutex mu;
  std::vector<otlp_collector::ExportProfilesServiceRequest> requests;
};

// The real daemon pushes each window to a collector on loopback: decoded with the OTLP schema,
// each request's sample total is that of the pprof archived for the same window (matched by
// start time), and its resource names the host and the executable.
TEST(ContinuousDaemonTest, PushesEachWindowAsOtlpWithThePprofsTotals) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  char tmpl[] = "/tmp/pathprof-otlp-XXXXXX";
  const std::string work = mkdtemp(tmpl);
  const std::string name = "ot" + std::to_string(getpid());
  const std::string exe = work + "/" + name;
  ASSERT_EQ(Sh("cp " + testing::kBin + "/example_hotloop " + exe).rc, 0);
  const pid_t loop = testing::Spawn({exe, "0"});
  ASSERT_GT(loop, 0);
  RecordingCollector collector;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&collector);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(port, 0);
  const std::string archive = work + "/windows";
  {
    Daemon daemon(
        "[continuous]\nenabled = true\nwindow_s = 1\nstack_hz = 99\n"
        "executables = [\"" +
        exe +
        "\"]\nhost = \"otlp-host\"\n"
        "archive_dir = \"" +
        archive +
        "\"\nkeep_windows = 20\n"
        "[continuous.otlp]\ntarget = \"127.0.0.1:" +
        std::to_string(port) + "\"\n");
    ASSERT_TRUE(daemon.Ready()) << daemon.Log();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(collector.mu);
        if (collector.requests.size() >= 3) break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "fewer than 3 OTLP requests in 60 s\n"
          << daemon.Log();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_EQ(daemon.Signal(SIGTERM), 0) << daemon.Log();
  }
  server->Shutdown();
  kill(loop, SIGKILL);
  waitpid(loop, nullptr, 0);

  // The archived pprof of each window, by its start (the file name's first 20 digits).
  uint64_t bytes = 0;
  std::map<uint64_t, int64_t> pprof_samples;
  for (const std::string& f : ArchiveFiles(archive, ".pb.gz", &bytes)) {
    std::ifstream in(f, std::ios::binary);
    auto p = profiles::pprof::ImportProfile(std::string(std::istreambuf_iterator<char>(in), {}));
    ASSERT_TRUE(p.ok()) << f << ": " << p.status().ToString();
    const std::string stem = f.substr(f.rfind('/') + 1);
    pprof_samples[std::stoull(stem.substr(0, 20))] = p->Totals()[0];
  }
  std::lock_guard<std::mutex> lock(collector.mu);
  ASSERT_GE(collector.requests.size(), 3u);
  size_t matched = 0;
  int64_t samples_seen = 0;
  for (const auto& r : collector.requests) {
    ASSERT_EQ(r.resource_profiles_size(), 1);
    std::map<std::string, std::string> resource;
    for (const auto& kv : r.resource_profiles(0).resource().attributes())
      resource[kv.key()] = kv.value().string_value();
    EXPECT_EQ(resource["host.name"], "otlp-host");
    EXPECT_EQ(resource["process.executable.path"], exe);
    EXPECT_EQ(resource["process.executable.name"], name);
    const auto& scope = r.resource_profiles(0).scope_profiles(0);
    ASSERT_GE(scope.profiles_size(), 1);
    const auto& profile = scope.profiles(0);
    EXPECT_EQ(r.dictionary().string_table(profile.sample_type().type_strindex()), "samples");
    int64_t total = 0;
    for (const auto& sample : profile.samples()) total += sample.values(0);
    samples_seen += total;
    auto archived = pprof_samples.find(profile.time_unix_nano());
    if (archived == pprof_samples.end()) continue;  // evicted from the archive: not compared
    ++matched;
    EXPECT_EQ(total, archived->second) << "window at " << profile.time_unix_nano();
  }
  EXPECT_EQ(matched, collector.requests.size());  // keep_windows holds them all
  EXPECT_GT(samples_seen, 0);
  Sh("rm -rf " + work);
}

// The attack on an executable's series: a user copies a program under the admin's executable's
// file name and runs it. Two-second windows of the admin's series hold the admin's process and
// never the user's (whose frames were pushed with the admin's when a series was a name).
TEST(ContinuousDaemonTest, AUsersProgramOfTheSameNameDoesNotJoin) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  const std::string as = testing::EnsureTestUser();
  char tmpl[] = "/tmp/pathprof-samename-XXXXXX";
  const std::string work = mkdtemp(tmpl);
  chmod(work.c_str(), 0755);
  const std::string name = "svc" + std::to_string(getpid());
  const std::string admin_exe = work + "/admin/" + name;
  const std::string user_exe = work + "/user/" + name;
  ASSERT_EQ(Sh("mkdir -p " + work + "/admin " + work + "/user && chown " + testing::kTestUser +
               " " + work + "/user && cp " + testing::kBin + "/example_hotloop " + admin_exe +
               " && " + as + "cp " + testing::kBin + "/example_hotloop " + user_exe)
                .rc,
            0);
  const pid_t admins = testing::Spawn({admin_exe, "0"});
  std::vector<std::string> argv = testing::AsUserArgv();
  argv.insert(argv.end(), {user_exe, "0"});
  const pid_t users = testing::Spawn(argv);
  const std::string archive = work + "/windows";
  {
    Daemon daemon(
        "[continuous]\nenabled = true\nwindow_s = 2\nstack_hz = 99\nsource = \"none\"\n"
        "archive_dir = \"" +
        archive + "\"\nkeep_windows = 10\nexecutables = [\"" + admin_exe + "\"]\n");
    ASSERT_TRUE(daemon.Ready()) << daemon.Log();
    uint64_t bytes = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (ArchiveFiles(archive, ".pb.gz", &bytes).size() < 2 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(daemon.Signal(SIGTERM), 0) << daemon.Log();
  }
  for (pid_t p : {admins, users}) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
  uint64_t bytes = 0;
  const auto profiles = ArchiveFiles(archive, ".pb.gz", &bytes);
  ASSERT_GE(profiles.size(), 2u) << "fewer than two windows archived in 15 s";
  int admins_windows = 0;
  for (const std::string& f : profiles) {
    // Each process's executable is a mapping of the window's profile (its string table).
    const std::string strings = Sh("zcat " + f + " | strings").out;
    EXPECT_EQ(strings.find(user_exe), std::string::npos) << f << " holds the user's program";
    if (strings.find(admin_exe) != std::string::npos) ++admins_windows;
  }
  EXPECT_GT(admins_windows, 0) << "no window holds the admin's executable";
  Sh("rm -rf " + work);
}

// GetStats names each push backend and says what went wrong with it: its address and the
// backend's answer (here a fake Pyroscope refusing every window with a body of its own) are the
// admin's. A non-admin sees the backend's kind and the counters, never the address or the text.
TEST(ContinuousDaemonTest, SinkDetailsAreForAdminsOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load eBPF";
  const std::string as = testing::EnsureTestUser();
  httplib::Server backend;
  backend.Post("/ingest", [](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content("backend-secret-answer", "text/plain");
  });
  const int port = backend.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { backend.listen_after_bind(); });
  char tmpl[] = "/tmp/pathprof-sinkstats-XXXXXX";
  const std::string work = mkdtemp(tmpl);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  HotLoop loop;  // one executable's series: a window of it is quick to make
  {
    Daemon daemon("[continuous]\nenabled = true\nwindow_s = 1\nstack_hz = 99\nexecutables = [\"" +
                      testing::kBin + "/example_hotloop\"]\narchive_dir = \"" + work +
                      "/windows\"\npush_attempts = 1\n[continuous.pyroscope]\nurl = \"" + url +
                      "\"\n",
                  {"--socket-group", testing::kTestGroup, "--admin-group", "pathprof-test-admins"});
    ASSERT_TRUE(daemon.Ready()) << daemon.Log();
    // The address is there from the start; the backend's answer once a window was pushed.
    auto first = daemon.Ctl("stats --json", as);
    ASSERT_EQ(first.rc, 0) << first.out;
    EXPECT_NE(first.out.find("\"pyroscope\""), std::string::npos) << first.out;
    EXPECT_EQ(first.out.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << first.out;
    std::string admin;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      admin = daemon.Ctl("stats --json").out;
    } while (admin.find("backend-secret-answer") == std::string::npos &&
             std::chrono::steady_clock::now() < deadline);
    EXPECT_NE(admin.find("backend-secret-answer"), std::string::npos) << admin;
    EXPECT_NE(admin.find(url), std::string::npos) << admin;
    auto user = daemon.Ctl("stats --json", as);
    ASSERT_EQ(user.rc, 0) << user.out;
    EXPECT_NE(user.out.find("pyroscope"), std::string::npos) << user.out;  // the kind stays
    EXPECT_EQ(user.out.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << user.out;
    EXPECT_EQ(user.out.find("backend-secret-answer"), std::string::npos) << user.out;
    EXPECT_EQ(daemon.Signal(SIGTERM), 0) << daemon.Log();
  }
  backend.stop();
  serving.join();
  Sh("rm -rf " + work);
}

// Every number following `"key":` in `json`, in order.
std::vector<double> Numbers(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::string needle = "\"" + key + "\":";
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1))
    out.push_back(std::atof(json.c_str() + at + needle.size()));
  return out;
}

// The two questions of docs/schedulers.md, asked the way a scheduler asks them: a session on the
// workload's selector (here its executable name; a unit or cgroup works the same), then
// "hottest methods" and "share of CPU under function X".
TEST(SchedulerQueriesTest, HottestMethodsAndCpuShareOfAFunction) {
  HotLoop loop;
  Daemon daemon;
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto started = daemon.Ctl("start --name example_hotloop --source none");
  ASSERT_EQ(started.rc, 0) << started.out << daemon.Log();
  const std::string id = testing::FirstLine(started.out);
  std::this_thread::sleep_for(std::chrono::seconds(2));

  auto methods = daemon.Ctl("methods " + id + " --top 3 --json");
  ASSERT_EQ(methods.rc, 0) << methods.out;
  // hot() runs 2000 iterations per round against warm()'s 500: it is the hottest method.
  auto first = methods.out.find("\"function\":\"");
  ASSERT_NE(first, std::string::npos) << methods.out;
  EXPECT_EQ(methods.out.compare(first + 12, 4, "hot\""), 0) << methods.out;

  auto tree = daemon.Ctl("tree " + id + " --root hot --depth 1 --json");
  ASSERT_EQ(tree.rc, 0) << tree.out;
  std::vector<double> weights = Numbers(tree.out, "total_weight");
  // Each root (a call of hot), then the tree's total: v1.CallingContextTree's field order, which
  // protobuf's JSON mapping keeps.
  ASSERT_GE(weights.size(), 2u) << tree.out;
  double under_hot = 0;
  for (size_t i = 0; i + 1 < weights.size(); ++i) under_hot += weights[i];
  const double total = weights.back();
  ASSERT_GT(total, 0);
  const double share = under_hot / total;
  EXPECT_GT(share, 0.5) << tree.out;  // ~4/5 of the loop's work by construction
  EXPECT_LE(share, 1.0 + 1e-9) << tree.out;
}

}  // namespace
}  // namespace pathprof::daemon
