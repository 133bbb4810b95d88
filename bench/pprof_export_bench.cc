// pprof export cost: adding PCCT-like stacks to the builder, serializing, and gzip on top.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "pathprof/profiles/pprof_export.h"
#include "pprof_samples.h"

namespace pp = pathprof::profiles::pprof;

namespace {

// n stacks of depth 16 over 500 functions (C++-length names) in one mapping, fixed seed.
std::vector<pp::Sample> MakeSamples(int n) {
  std::mt19937_64 rng(42);
  const pp::Mapping m{.start = 0x400000,
                      .limit = 0x800000,
                      .offset = 0,
                      .file = "/usr/bin/app",
                      .build_id = "0123456789abcdef0123456789abcdef01234567"};
  std::vector<pp::WeightedStack> stacks(n);
  for (auto& s : stacks) {
    for (int d = 0; d < 16; ++d) {
      const uint64_t f = rng() % 500;
      s.frames.push_back(pp::Location{
          .address = 0x400000 + f * 0x100 + rng() % 4 * 8,
          .mapping = m,
          .frames = {{.function = "pathprof::bench::Namespace::Function" + std::to_string(f),
                      .system_name = {},
                      .file = "src/file" + std::to_string(f % 40) + ".cc",
                      .line = static_cast<int64_t>(f * 3),
                      .start_line = 0}}});
    }
    s.weight = static_cast<int64_t>(rng() % 100 + 1);
  }
  const std::vector<int64_t> per_weight = {1, 10'000'000};
  return std::move(pp::SamplesFromStacks(stacks, per_weight)).value();
}

pp::ProfileOptions Options() {
  pp::ProfileOptions o;
  o.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  o.period_type = {"cpu", "nanoseconds"};
  o.period = 10'000'000;
  o.common_labels = {{"host", "bench-host"}, {"unit", "app.service"}};
  return o;
}

pp::ProfileBuilder Build(const std::vector<pp::Sample>& samples) {
  auto b = pp::ProfileBuilder::Create(Options());
  for (const pp::Sample& s : samples) benchmark::DoNotOptimize(b->AddSample(s).ok());
  return std::move(b).value();
}

void BM_AddSamples(benchmark::State& state) {
  const auto samples = MakeSamples(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Build(samples).sample_count());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_Serialize(benchmark::State& state) {
  const auto b = Build(MakeSamples(static_cast<int>(state.range(0))));
  size_t bytes = 0;
  for (auto _ : state) bytes = b.SerializeUncompressed()->size();
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_SerializeGzip(benchmark::State& state) {
  const auto b = Build(MakeSamples(static_cast<int>(state.range(0))));
  size_t bytes = 0;
  for (auto _ : state) bytes = b.SerializeGzip()->size();
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["bytes"] = static_cast<double>(bytes);
}

}  // namespace

BENCHMARK(BM_AddSamples)->Arg(10'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Serialize)->Arg(10'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SerializeGzip)->Arg(10'000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
