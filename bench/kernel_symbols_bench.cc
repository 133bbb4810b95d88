// Naming the first kernel frame: the kernel's symbol table (/proc/kallsyms, 5 MB, 120k code
// symbols) read line by line into the compact table SymbolService keeps, against the file read
// whole (what the table was built from before: docs/performance.md, "Stacks only") and against
// the line reader alone (what the kernel's formatting of the file costs, the floor). Minor page
// faults per build are counted: on a PVM guest each costs ~19 us.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "kernel_symbols.h"
#include "pathprof/core/procfs.h"
#include "pathprof/core/procfs_lines.h"

namespace {

using pathprof::pipeline::KernelSymbolTable;
using pathprof::procfs::Procfs;

long MinorFaults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

void CountFaults(benchmark::State& state, long before) {
  state.counters["faults"] = benchmark::Counter(static_cast<double>(MinorFaults() - before),
                                                benchmark::Counter::kAvgIterations);
}

void BM_KallsymsLinesOnly(benchmark::State& state) {
  const long before = MinorFaults();
  size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    auto read = pathprof::procfs::ForEachGlobalLine(
        Procfs::Host(), "kallsyms", KernelSymbolTable::kMaxBytes, KernelSymbolTable::kMaxLineBytes,
        [&](std::string_view) { ++lines; });
    if (!read.ok()) state.SkipWithError(read.ToString().c_str());
  }
  state.counters["lines"] = static_cast<double>(lines);
  CountFaults(state, before);
}
BENCHMARK(BM_KallsymsLinesOnly)->Unit(benchmark::kMillisecond);

void BM_KallsymsReadWhole(benchmark::State& state) {
  const long before = MinorFaults();
  for (auto _ : state) {
    auto text = Procfs::Host().ReadGlobal("kallsyms", KernelSymbolTable::kMaxBytes);
    if (!text.ok()) state.SkipWithError(text.status().ToString().c_str());
    benchmark::DoNotOptimize(text);
  }
  CountFaults(state, before);
}
BENCHMARK(BM_KallsymsReadWhole)->Unit(benchmark::kMillisecond);

void BM_KernelSymbolTable(benchmark::State& state) {
  const long before = MinorFaults();
  size_t symbols = 0;
  for (auto _ : state) {
    KernelSymbolTable table = KernelSymbolTable::Read(Procfs::Host());
    symbols = table.size();
    benchmark::DoNotOptimize(table);
  }
  state.counters["symbols"] = static_cast<double>(symbols);
  CountFaults(state, before);
}
BENCHMARK(BM_KernelSymbolTable)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
