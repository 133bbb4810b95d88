// Emulated branch windows (step mode emulate) on live programs: a child runs the workload, and
// each iteration takes one window the way the burst tracer does — PTRACE_INTERRUPT the running
// thread, wait for its stop, copy its registers, run its next 32 taken branches in the
// emulator, resume it. Two times per window:
//   BM_EmulateWindow/<program>: the emulator alone (the "emulation cost" figure);
//   BM_WholeStop/<program>:     interrupt to resume, what the target is stopped for.
// Counters: instructions and pages read from the target per window, and the share of windows
// that ended early. The programs: example_hotloop_static from this build, Debian's zstd,
// xz and python3 where installed (skipped, with the reason, where not), and lua5.4 as the
// optimizer loop builds it where the environment names it.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "emulated_windows.h"
#include "live_guest.h"
#include "pathprof/core/clock.h"

namespace {

using pathprof::MonotonicNs;
using pathprof::stepping::EmulatedWindows;

// A workload child, seized (not stopped) by this thread, killed at the end.
class Target {
 public:
  explicit Target(std::vector<std::string> argv) {
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> a;
      for (std::string& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      const int null = open("/dev/null", O_WRONLY);  // the workloads write their output there
      dup2(null, 1);
      execv(a[0], a.data());
      _exit(127);
    }
    usleep(200'000);  // past start-up, into the steady work
    ok_ = pid_ > 0 && ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) == 0;
  }
  ~Target() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, __WALL);
  }
  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

std::string BinDir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

// A zstd/xz input: 64 MiB of text-like bytes, written once.
std::string Input() {
  const std::string path = "/tmp/pathprof-emulated-window-bench.txt";
  if (!std::filesystem::exists(path)) {
    std::ofstream out(path);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < (64 << 20) / 8; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      out << "word" << (x % 997) << ' ';
    }
  }
  return path;
}

std::vector<std::string> Program(const std::string& name) {
  if (name == "hotloop") return {BinDir() + "/example_hotloop_static", "2000000000"};
  if (name == "zstd")  // one thread: -T1 would compress in a worker the bench does not seize
    return {"/usr/bin/zstd", "-19", "--single-thread", "-c", "-f", Input(), "-o", "/dev/null"};
  if (name == "xz") return {"/usr/bin/xz", "-9", "-T1", "-c", "-k", Input()};
  if (name == "python3")
    return {"/usr/bin/python3", "-c",
            "d={}\nfor i in range(10**9):\n  d[i%1000]=d.get(i%7,0)+len(str(i))"};
  if (name == "lua") {  // Debian's lua5.4 built by scripts/bench-bolt-loop.sh, on its workload
    const char* lua = std::getenv("PATHPROF_BENCH_LUA");
    const char* script = std::getenv("PATHPROF_BENCH_LUA_SCRIPT");
    if (lua && script) return {lua, script, "100000"};
  }
  return {};
}

void Windows(benchmark::State& state, const std::string& name, bool whole_stop) {
  const std::vector<std::string> argv = Program(name);
  if (argv.empty() || access(argv[0].c_str(), X_OK) != 0) {
    static std::string why;  // the library may keep the pointer past this call
    if (!argv.empty())
      why = argv[0] + " is not installed";
    else  // only lua has no fixed place
      why =
          "lua is not set up: PATHPROF_BENCH_LUA=the lua.plain of scripts/bench-bolt-loop.sh, "
          "PATHPROF_BENCH_LUA_SCRIPT=bench/workloads/lua_mixed.lua";
    state.SkipWithError(why.c_str());
    return;
  }
  Target target(argv);
  if (!target.ok()) {
    static std::string why;
    why = "could not start and seize " + argv[0];
    state.SkipWithError(why.c_str());
    return;
  }
  EmulatedWindows windows(target.pid(), 32);
  uint64_t count = 0, instructions = 0, pages = 0, early = 0;
  std::vector<uint64_t> times;
  for (auto _ : state) {
    const uint64_t t0 = MonotonicNs();
    if (ptrace(PTRACE_INTERRUPT, target.pid(), nullptr, nullptr) != 0) break;
    int st = 0;
    if (waitpid(target.pid(), &st, __WALL) != target.pid() || !WIFSTOPPED(st)) break;
    pathprof::emulator::CpuState start;
    bool in_syscall = false;
    pathprof::stepping::ReadCpuState(target.pid(), &start, &in_syscall);
    EmulatedWindows::Window w;
    if (!in_syscall) windows.Run(target.pid(), start, &w);
    // A signal the child stopped for instead is handed back to it.
    const int sig = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
    ptrace(PTRACE_CONT, target.pid(), nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    const uint64_t t1 = MonotonicNs();
    const uint64_t ns = whole_stop ? t1 - t0 : w.emulate_ns;
    state.SetIterationTime(static_cast<double>(ns) / 1e9);
    times.push_back(ns);
    ++count;
    instructions += w.emulated.instructions;
    pages += w.emulated.pages_read;
    early += w.emulated.end != pathprof::emulator::EmulationEnd::kComplete;
    usleep(500);  // the target runs on between windows, as under the tracer
  }
  const double n = count ? static_cast<double>(count) : 1;
  state.counters["instructions"] = static_cast<double>(instructions) / n;
  state.counters["pages_read"] = static_cast<double>(pages) / n;
  state.counters["early_end_pct"] = 100.0 * static_cast<double>(early) / n;
  const auto& prefetch = windows.pages().prefetch();
  state.counters["prefetched"] = static_cast<double>(prefetch.prefetched()) / n;
  state.counters["prefetch_used"] = static_cast<double>(prefetch.taken()) / n;
  state.counters["read_one_by_one"] = static_cast<double>(windows.pages().page_reads()) / n;
  state.counters["maps_queries"] = static_cast<double>(windows.pages().queries()) / n;
  // The figure is the median window; the mean above is pulled up by cold windows.
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    state.counters["median_us"] = static_cast<double>(times[times.size() / 2]) / 1000.0;
    state.counters["p90_us"] = static_cast<double>(times[times.size() * 9 / 10]) / 1000.0;
  }
}

void BM_EmulateWindow(benchmark::State& state, const char* name) {
  Windows(state, name, false);
}
void BM_WholeStop(benchmark::State& state, const char* name) {
  Windows(state, name, true);
}

}  // namespace

#define PROGRAM(name)                                                                  \
  BENCHMARK_CAPTURE(BM_EmulateWindow, name, #name)->UseManualTime()->Iterations(2000); \
  BENCHMARK_CAPTURE(BM_WholeStop, name, #name)->UseManualTime()->Iterations(2000)
PROGRAM(hotloop);
PROGRAM(zstd);
PROGRAM(xz);
PROGRAM(python3);
PROGRAM(lua);

BENCHMARK_MAIN();
