// What symbolizing and unwinding in the sandboxed helper (pathprof-symbolizer, pipeline/src/
// symbolizer_client.h) costs against libdw in the calling process, as the daemon did before:
// the same SymbolService calls both ways (/0 here, /1 the helper), over this process's own
// binaries (the benchmark, libc, libstdc++, libdw, ...).
//   BM_FunctionStartWarm: a name per address for 4,096 addresses already asked once (a
//     session's ingest and its queries: libdw's caches warm on both sides; a round trip each).
//   BM_SymbolizeCold: a new service per iteration naming 256 addresses with source lines: the
//     helper's start, each image handed over and read by libdw (a query's first look).
//   BM_UnwindWarm: one stack sample (16 KiB copy) unwound by CFI, images known.
// Run with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N:
// docs/performance.md reports the ratio of the medians.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <vector>

#include "common/stack_capture.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/symbol_service.h"

namespace {

namespace pp = pathprof::pipeline;
namespace dec = pathprof::decoders;

pp::SymbolizeIn Where(const benchmark::State& state) {
  return state.range(0) == 1 ? pp::SymbolizeIn::kHelper : pp::SymbolizeIn::kThisProcess;
}

const dec::AddressSpace& Space() {
  static const dec::AddressSpace space = *dec::ReadProcMaps(getpid());
  return space;
}

// `n` addresses spread over the executable file mappings.
std::vector<uint64_t> Addresses(size_t n) {
  std::vector<uint64_t> all;
  for (const dec::Mapping& m : Space().mappings()) {
    if (!m.executable || m.IsSpecial() || m.len == 0) continue;
    for (uint64_t a = m.start; a < m.end(); a += 97) all.push_back(a);
  }
  std::vector<uint64_t> out;
  const size_t step = std::max<size_t>(1, all.size() / n);
  for (size_t i = 0; i < all.size() && out.size() < n; i += step) out.push_back(all[i]);
  return out;
}

void Label(benchmark::State& state, size_t calls) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * calls));
  state.SetLabel(state.range(0) == 1 ? "helper" : "here");
}

void BM_FunctionStartWarm(benchmark::State& state) {
  pp::SymbolService symbols(dec::ImageStoreOptions{}, Where(state));
  const std::vector<uint64_t> addresses = Addresses(4096);
  for (uint64_t a : addresses) benchmark::DoNotOptimize(symbols.FunctionStart(0, Space(), a));
  for (auto _ : state)
    for (uint64_t a : addresses) benchmark::DoNotOptimize(symbols.FunctionStart(0, Space(), a));
  Label(state, addresses.size());
}
BENCHMARK(BM_FunctionStartWarm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SymbolizeCold(benchmark::State& state) {
  const std::vector<uint64_t> addresses = Addresses(256);
  for (auto _ : state) {
    pp::SymbolService symbols(dec::ImageStoreOptions{}, Where(state));
    for (uint64_t a : addresses) benchmark::DoNotOptimize(symbols.Symbolize(0, Space(), a));
  }
  Label(state, addresses.size());
}
BENCHMARK(BM_SymbolizeCold)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

__attribute__((noinline, optimize("omit-frame-pointer"))) void Capture(
    pathprof::testing::CapturedStack* c) {
  pathprof::testing::CaptureStackHere(c);
  asm volatile("" ::: "memory");
}

void BM_UnwindWarm(benchmark::State& state) {
  pathprof::testing::CapturedStack c;
  Capture(&c);
  pp::SymbolService symbols(dec::ImageStoreOptions{}, Where(state));
  size_t frames = symbols.UnwindUser(0, Space(), c.regs, c.stack_start, c.stack).frames.size();
  for (auto _ : state)
    benchmark::DoNotOptimize(symbols.UnwindUser(0, Space(), c.regs, c.stack_start, c.stack));
  state.counters["frames"] = static_cast<double>(frames);
  Label(state, 1);
}
BENCHMARK(BM_UnwindWarm)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
