// Snapshot windows from the real eBPF sampler, checked at the same instant (issue 39's verify
// mode, tests/collectors/snapshot_verify.h): on example_hotloop and Debian's xz, zstd,
// python3, sqlite3 and lua5.4, each program's windows under each setting, compared event by
// event with the stop-and-emulate window taken where the thread stopped for the sample's
// signal. Prints, per program and setting: windows compared, identical share (the exactness
// bar), median / mean taken branches and the share reaching 24 (the length bar), the early ends
// by reason, where the pages the snapshot windows read came from, and the bytes per record.
//
// PATHPROF_SNAPSHOT_WINDOWS (default 400) windows per program and setting; the sampler runs at
// 199 Hz (each sample stops the thread here, which verify mode needs and the product does not).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "live_workload.h"
#include "snapshot_verify.h"

namespace {

using pathprof::collectors::SnapshotPageSource;
namespace verify = pathprof::collectors::verify;

struct Setting {
  std::string name;
  verify::Options options;
};

std::vector<Setting> Settings() {
  std::vector<Setting> out;
  verify::Options defaults;  // a 16 KiB stack and 1 KiB around each register, no hints
  out.push_back({"stack16+regs(-256,+768)", defaults});
  verify::Options small = defaults;
  small.stack_bytes = 4096;
  out.push_back({"stack4+regs(-256,+768)", small});
  verify::Options hints = defaults;
  hints.snapshot.hint_pages = 64;
  hints.snapshot.max_bytes = pathprof::collectors::kMaxSnapshotBytes;
  hints.learn_hints = true;
  out.push_back({"+ 64 hint pages per process (learned from stop windows)", hints});
  verify::Options wide = hints;
  wide.snapshot.register_below = 1024;
  wide.snapshot.register_above = 3072;
  out.push_back({"stack16+regs(-1024,+3072)+64 hint pages", wide});
  return out;
}

uint32_t WindowsWanted() {
  const char* env = std::getenv("PATHPROF_SNAPSHOT_WINDOWS");
  return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 400;
}

struct Row {
  std::string program, setting;
  verify::Result result;
};
std::vector<Row> g_rows;

void BM_SnapshotWindows(benchmark::State& state, const std::string& name) {
  const std::vector<std::string> argv = pathprof::bench::LiveProgram(name);
  if (const std::string missing = pathprof::bench::LiveProgramMissing(argv); !missing.empty()) {
    static std::string why;
    why = missing;
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) {
    for (const Setting& setting : Settings()) {
      pathprof::bench::LiveTarget target(argv);
      if (!target.ok()) {
        state.SkipWithError("could not start and seize the program");
        return;
      }
      verify::Options opt = setting.options;
      opt.windows = WindowsWanted();
      opt.max_seconds = 120;
      g_rows.push_back({name, setting.name, verify::Run(target.pid(), opt)});
      const verify::Result& r = g_rows.back().result;
      state.counters[setting.name.substr(0, 6) + "_identical"] =
          r.compared ? static_cast<double>(r.identical) / static_cast<double>(r.compared) : 0;
    }
  }
}

double Mean(const std::vector<uint32_t>& v) {
  double s = 0;
  for (uint32_t x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double ShareAtLeast(const std::vector<uint32_t>& v, uint32_t n) {
  size_t k = 0;
  for (uint32_t x : v) k += x >= n;
  return v.empty() ? 0 : 100.0 * static_cast<double>(k) / static_cast<double>(v.size());
}

void PrintTable() {
  std::printf(
      "\n| program | setting | compared | identical | median | mean | >= 24 | live median | "
      "ends (not complete) | pages: image / stack / record / unknown | KiB per record | us per "
      "window (median) |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|\n");
  for (const Row& row : g_rows) {
    const verify::Result& r = row.result;
    std::string ends;
    for (int e = 1; e < pathprof::emulator::kEmulationEndCount; ++e)
      if (const uint64_t n = r.ends[static_cast<size_t>(e)]; n != 0)
        ends += std::string(ends.empty() ? "" : ", ") +
                std::string(pathprof::emulator::EmulationEndName(
                    static_cast<pathprof::emulator::EmulationEnd>(e))) +
                " " + std::to_string(n);
    if (!r.error.empty()) ends += " (" + r.error + ")";
    const auto& p = r.page_sources;
    std::printf(
        "| %s | %s | %llu | %.1f%% | %u | %.1f | %.0f%% | %u | %s | %llu / %llu / %llu / %llu | "
        "%.1f | %.1f |\n",
        row.program.c_str(), row.setting.c_str(), static_cast<unsigned long long>(r.compared),
        r.compared ? 100.0 * static_cast<double>(r.identical) / static_cast<double>(r.compared)
                   : 0.0,
        verify::Result::Median(r.taken), Mean(r.taken), ShareAtLeast(r.taken, 24),
        verify::Result::Median(r.live_taken), ends.c_str(),
        static_cast<unsigned long long>(p[static_cast<size_t>(SnapshotPageSource::kImage)]),
        static_cast<unsigned long long>(p[static_cast<size_t>(SnapshotPageSource::kStack)]),
        static_cast<unsigned long long>(p[static_cast<size_t>(SnapshotPageSource::kRecord)]),
        static_cast<unsigned long long>(p[static_cast<size_t>(SnapshotPageSource::kUnknown)]),
        r.compared ? static_cast<double>(r.record_bytes) / 1024.0 / static_cast<double>(r.compared)
                   : 0.0,
        verify::Result::Median(r.snapshot_window_ns) / 1000.0);
    for (const std::string& d : r.differences) std::printf("|   | difference: %s |\n", d.c_str());
  }
}

}  // namespace

#define PROGRAM(id, name) BENCHMARK_CAPTURE(BM_SnapshotWindows, id, name)->Iterations(1)
PROGRAM(hotloop, "hotloop");
PROGRAM(xz, "xz");
PROGRAM(zstd, "zstd");
PROGRAM(python3, "python3");
PROGRAM(sqlite3, "sqlite3");
PROGRAM(lua54, "lua5.4");

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintTable();
  return 0;
}
