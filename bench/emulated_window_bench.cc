// Emulated branch windows (step mode emulate) on live programs: a child runs the workload, and
// each iteration takes one window the way the burst tracer does — PTRACE_INTERRUPT the running
// thread, wait for its stop, copy its registers, run its next 32 taken branches in the
// emulator, resume it. Two times per window:
//   BM_EmulateWindow/<program>: the emulator alone (the "emulation cost" figure);
//   BM_WholeStop/<program>:     interrupt to resume, what the target is stopped for.
// Counters: instructions and pages read from the target per window, and the share of windows
// that ended early. The programs (live_workload.h): example_hotloop_static from this build,
// Debian's zstd, xz and python3 where installed (skipped, with the reason, where not), and lua5.4
// as the optimizer loop builds it where the environment names it.
#include <benchmark/benchmark.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "emulated_windows.h"
#include "live_guest.h"
#include "live_workload.h"
#include "pathprof/core/clock.h"

namespace {

using pathprof::MonotonicNs;
using pathprof::bench::LiveProgram;
using pathprof::bench::LiveProgramMissing;
using pathprof::bench::LiveTarget;
using pathprof::stepping::EmulatedWindows;

void Windows(benchmark::State& state, const std::string& name, bool whole_stop) {
  const std::vector<std::string> argv = LiveProgram(name);
  if (const std::string missing = LiveProgramMissing(argv); !missing.empty()) {
    static std::string why;  // the library may keep the pointer past this call
    why = missing;
    state.SkipWithError(why.c_str());
    return;
  }
  LiveTarget target(argv);
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
