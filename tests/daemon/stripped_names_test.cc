// Names a user can act on, on a program nobody here built: Debian's zstd (stripped, -O2, no
// frame pointers), profiled by the real daemon. Its code has no symbols, so each function is
// named after its unwind entry (FDE); the hottest such function must be one row, named by the
// FDE start that readelf reads, in `pathctl methods` and in `go tool pprof -top` of the export,
// with the same share in both.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "daemon_harness.h"

namespace pathprof::daemon::testing {
namespace {

// readelf's FDEs of `path`: start -> end.
std::map<uint64_t, uint64_t> FdeRanges(const std::string& path) {
  std::map<uint64_t, uint64_t> out;
  const CmdResult r = Sh("readelf --debug-dump=frames " + path);
  std::regex fde(R"(FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), fde);
       it != std::sregex_iterator(); ++it)
    out[std::stoull((*it)[1].str(), nullptr, 16)] = std::stoull((*it)[2].str(), nullptr, 16);
  return out;
}

struct MethodRow {
  std::string function;
  double share = 0;
};

// The rows of `pathctl methods --json`, in its order.
std::vector<MethodRow> Methods(const std::string& json) {
  std::vector<MethodRow> rows;
  std::regex row(
      R"re("function":\{[^{}]*?"function":"([^"]*)"[^{}]*\}.*?"self":\{[^{}]*?"share":([0-9.eE+-]+))re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), row); it != std::sregex_iterator();
       ++it)
    rows.push_back({(*it)[1].str(), std::stod((*it)[2].str())});
  return rows;
}

TEST(StrippedNames, ZstdHottestUnnamedFunctionIsOneRowInMethodsAndPprof) {
  const std::string zstd = "/usr/bin/zstd";
  if (access(zstd.c_str(), X_OK) != 0) GTEST_SKIP() << zstd << " is not installed (apt zstd)";
  if (Sh("readelf --version").rc != 0) GTEST_SKIP() << "no readelf (apt binutils)";
  if (Sh("go version").rc != 0) GTEST_SKIP() << "no go tool pprof (apt golang-go)";
  const auto fdes = FdeRanges(zstd);
  ASSERT_GT(fdes.size(), 500u);

  Daemon daemon;
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  // Text with some entropy, compressed at -19 for longer than the test samples it.
  const std::string input = daemon.dir() + "/input.txt";
  {
    std::ofstream out(input);
    uint64_t x = 88172645463325252ull;
    for (int line = 0; line < 200000; ++line) {
      for (int w = 0; w < 8; ++w) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out << "word" << (x % 5000) << ' ';
      }
      out << '\n';
    }
  }
  const pid_t target =
      Spawn({zstd, "-q", "-19", "-T1", "-f", "-o", "/dev/null", input}, daemon.dir() + "/zstd.log");
  ASSERT_GT(target, 0);
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{target};
  const CmdResult started =
      daemon.Ctl("start --pid " + std::to_string(target) + " --source none -F 499");
  ASSERT_EQ(started.rc, 0) << started.out << daemon.Log();
  const std::string id = FirstLine(started.out);
  // 600 samples: a 10% function is then known to about ±1.2 pp, and both views count the same
  // samples (the session is stopped before either is read).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::smatch m;
  long long samples = 0;
  while (samples < 600 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const std::string stats = daemon.Ctl("stats " + id + " --json").out;
    if (std::regex_search(stats, m, std::regex("\"stack_samples\":\"?([0-9]+)")))
      samples = std::stoll(m[1].str());
  }
  ASSERT_GE(samples, 600) << daemon.Ctl("stats " + id).out;
  ASSERT_EQ(daemon.Ctl("stop " + id).rc, 0);

  const CmdResult methods = daemon.Ctl("methods " + id + " --top 1000 --json");
  ASSERT_EQ(methods.rc, 0) << methods.out;
  const auto rows = Methods(methods.out);
  ASSERT_FALSE(rows.empty()) << methods.out;
  // Every unnamed zstd row is an FDE start, and no FDE has two rows.
  std::set<uint64_t> seen;
  const MethodRow* hottest = nullptr;
  for (const MethodRow& row : rows) {
    if (!row.function.starts_with("zstd+0x")) continue;
    const uint64_t start = std::stoull(row.function.substr(7), nullptr, 16);
    EXPECT_TRUE(fdes.count(start)) << row.function << " is not the start of an FDE";
    EXPECT_TRUE(seen.insert(start).second) << row.function << " has two rows";
    if (hottest == nullptr || row.share > hottest->share) hottest = &row;
  }
  ASSERT_NE(hottest, nullptr) << "no unnamed zstd function sampled:\n" << methods.out;
  EXPECT_GT(hottest->share, 0.05) << hottest->function;

  const std::string file = daemon.dir() + "/zstd.pb.gz";
  const CmdResult exported = daemon.Ctl("export " + id + " -o " + file);
  ASSERT_EQ(exported.rc, 0) << exported.out;
  const CmdResult top = Sh("HOME=" + daemon.dir() + " GOCACHE=" + daemon.dir() +
                           "/gocache go tool pprof -symbolize=none -top -nodecount=10000 " + file);
  ASSERT_EQ(top.rc, 0) << top.out;
  // Our names as exported (-symbolize=none: pprof would otherwise try /usr/bin/zstd itself):
  // "      1234 20.50% 20.50%       1234 20.50%  zstd+0x97210"
  int pprof_rows = 0;
  double flat = -1;
  std::istringstream lines(top.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.ends_with(" " + hottest->function)) continue;
    ++pprof_rows;
    std::smatch f;
    if (std::regex_search(line, f, std::regex(R"(^\s*\S+\s+([0-9.]+)%)")))
      flat = std::stod(f[1].str()) / 100;
  }
  EXPECT_EQ(pprof_rows, 1) << top.out;
  EXPECT_NEAR(flat, hottest->share, 0.005) << hottest->function << "\n" << top.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
