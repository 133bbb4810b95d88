// Speed of the synthetic program executor: branches generated per second per bundled workload.
#include <benchmark/benchmark.h>

#include "pathprof/synth/executor.h"

namespace {

void BM_SynthRun(benchmark::State& state, const char* name) {
  auto spec = pathprof::synth::BundledWorkload(name, 1);
  auto program = pathprof::synth::GenerateProgram(*spec);
  pathprof::synth::Executor ex(*program, 1);
  std::vector<pathprof::BranchEvent> buf(65536);
  for (auto _ : state) {
    ex.Run(buf.size(), buf.data());
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * buf.size()));
}

BENCHMARK_CAPTURE(BM_SynthRun, loops, "loops");
BENCHMARK_CAPTURE(BM_SynthRun, branchy, "branchy");
BENCHMARK_CAPTURE(BM_SynthRun, calls, "calls");
BENCHMARK_CAPTURE(BM_SynthRun, large, "large");

}  // namespace
BENCHMARK_MAIN();
