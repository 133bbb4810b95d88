// Path engine throughput: branch events per second through PathStack (BL preset) + HotPathTable
// (512 x 4, XOR index, LFU), against (a) streaming the same events summing a field (the memory
// bound) and (b) the same path detection feeding an exact std::unordered_map counter.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "../tests/hwmodel/synthetic_stream.h"
#include "pathprof/hwmodel/hot_path_table.h"
#include "pathprof/hwmodel/path_stack.h"

namespace pathprof::hwmodel {
namespace {

const std::vector<BranchEvent>& Stream() {
  static const std::vector<BranchEvent> stream = testing::SyntheticStream(1).Generate(4'000'000);
  return stream;
}

void BM_StreamSum(benchmark::State& state) {
  const auto& s = Stream();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const BranchEvent& e : s) sum += e.instructions;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}
BENCHMARK(BM_StreamSum)->Unit(benchmark::kMillisecond);

void BM_PathStackOnly(benchmark::State& state) {
  const auto& s = Stream();
  auto stack = PathStack::Create(BallLarusPreset()).value();
  uint64_t paths = 0;
  for (auto _ : state) {
    stack.Reset();
    for (const BranchEvent& e : s) stack.Process(e, [&paths](const CompletedPath&) { ++paths; });
  }
  benchmark::DoNotOptimize(paths);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}
BENCHMARK(BM_PathStackOnly)->Unit(benchmark::kMillisecond);

void BM_PathStackHpt(benchmark::State& state) {
  const auto& s = Stream();
  auto stack = PathStack::Create(BallLarusPreset()).value();
  HotPathTableConfig config;  // 512 entries, 4 ways, XOR index, LFU, count
  auto hpt = HotPathTable::Create(config).value();
  for (auto _ : state) {
    stack.Reset();
    for (const BranchEvent& e : s)
      stack.Process(e, [&hpt](const CompletedPath& c) { hpt.Record(c); });
  }
  benchmark::DoNotOptimize(hpt.Total());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.counters["paths_per_event"] =
      static_cast<double>(stack.stats().paths) / static_cast<double>(stack.stats().events);
}
BENCHMARK(BM_PathStackHpt)->Unit(benchmark::kMillisecond);

// The baseline a software path profiler would write: a hash map keyed by the descriptor fields,
// hashed with std::hash and the usual combine step.
struct MapKey {
  uint64_t start;
  uint64_t outcomes;
  uint8_t length;
  bool operator==(const MapKey&) const = default;
};
struct MapKeyHash {
  size_t operator()(const MapKey& k) const {
    size_t h = std::hash<uint64_t>()(k.start);
    h ^= std::hash<uint64_t>()(k.outcomes) + 0x9e3779b9 + (h << 6) + (h >> 2);
    h ^= std::hash<uint8_t>()(k.length) + 0x9e3779b9 + (h << 6) + (h >> 2);
    return h;
  }
};

void BM_PathStackUnorderedMap(benchmark::State& state) {
  const auto& s = Stream();
  auto stack = PathStack::Create(BallLarusPreset()).value();
  std::unordered_map<MapKey, uint64_t, MapKeyHash> counts;
  for (auto _ : state) {
    stack.Reset();
    for (const BranchEvent& e : s) {
      stack.Process(e, [&counts](const CompletedPath& c) {
        counts[MapKey{c.path.start, c.path.outcomes, c.path.length}] += 1;
      });
    }
  }
  benchmark::DoNotOptimize(counts.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.counters["distinct_paths"] = static_cast<double>(counts.size());
}
BENCHMARK(BM_PathStackUnorderedMap)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pathprof::hwmodel

BENCHMARK_MAIN();
