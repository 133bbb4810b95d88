// PCCT update cost per 64-frame stack sample (the bar: <= 1 us per sample) and top-k cost.
//
// The realistic mix: 8 threads whose stacks are ~64 frames deep and share a 40-frame root-side
// prefix; between two samples of a thread the leaf is still running with probability 0.4,
// otherwise 1..6 frames return and as many new frames are called (so a few new frames per sample),
// callees drawn from a fanout of 4 per caller so that contexts repeat. The sequence is generated
// once with a fixed seed and replayed; the tree is warmed by one pass first (steady state).
#include <benchmark/benchmark.h>

#include <random>

#include "pathprof/profiles/pcct.h"

namespace pathprof::profiles {
namespace {

constexpr size_t kDepth = 64;
constexpr uint32_t kThreads = 8;

StackFrame Callee(const StackFrame& caller, uint64_t choice) {
  const uint64_t f = (caller.function * 0x9e3779b97f4a7c15ULL + choice + 1) >> 20 | 0x400000;
  return {f, caller.function + 0x10 + choice * 8};
}

std::vector<StackSample> MixedSamples(size_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<StackFrame>> stacks(kThreads);  // root-side first
  for (uint32_t t = 0; t < kThreads; ++t) {
    stacks[t].push_back({0x401000, 0});
    for (size_t d = 1; d < kDepth; ++d) {
      // The first 40 frames are the same in every thread (runtime, event loop, dispatch).
      stacks[t].push_back(Callee(stacks[t].back(), d < 40 ? 0 : (t + d) % 4));
    }
  }
  std::vector<StackSample> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t t = static_cast<uint32_t>(rng() % kThreads);
    auto& st = stacks[t];
    if (rng() % 10 >= 4) {
      const size_t pop = 1 + rng() % 6;
      st.resize(st.size() - std::min(pop, st.size() - 41));
      while (st.size() < kDepth) st.push_back(Callee(st.back(), rng() % 4));
    }
    StackSample s;
    s.pid = 1;
    s.tid = t + 1;
    s.frames.assign(st.rbegin(), st.rend());
    out.push_back(std::move(s));
  }
  return out;
}

void BM_PcctAddMixed64(benchmark::State& state) {
  const std::vector<StackSample> samples = MixedSamples(1 << 16, 1);
  Pcct t(1);
  for (const StackSample& s : samples) (void)t.Add(s);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.Add(samples[i]));
    i = (i + 1) & (samples.size() - 1);
  }
  state.SetItemsProcessed(state.iterations());
  const PcctStats st = t.stats();
  state.counters["nodes"] = static_cast<double>(t.node_count());
  state.counters["new_frames/sample"] =
      static_cast<double>(st.new_frames) / static_cast<double>(st.samples);
}
BENCHMARK(BM_PcctAddMixed64);

// Every frame new every time: two unrelated 64-frame stacks alternate on one thread, so each
// sample walks and increments 64 edges (the worst case for the sorted edge index).
void BM_PcctAddAllNew64(benchmark::State& state) {
  std::vector<StackSample> samples(2);
  for (int k = 0; k < 2; ++k) {
    std::vector<StackFrame> st = {{0x401000u + k * 0x100000u, 0}};
    while (st.size() < kDepth) st.push_back(Callee(st.back(), k));
    samples[k].pid = 1;
    samples[k].tid = 1;
    samples[k].frames.assign(st.rbegin(), st.rend());
  }
  Pcct t(1);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.Add(samples[i]));
    i ^= 1;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PcctAddAllNew64);

// The same stack again and again (a long-running leaf): only totals and the leaf's self change.
void BM_PcctAddSame64(benchmark::State& state) {
  const std::vector<StackSample> samples = MixedSamples(1, 3);
  Pcct t(1);
  for (auto _ : state) benchmark::DoNotOptimize(t.Add(samples[0]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PcctAddSame64);

void BM_PcctTop10(benchmark::State& state) {
  const std::vector<StackSample> samples = MixedSamples(1 << 16, 1);
  Pcct t(1);
  for (const StackSample& s : samples) (void)t.Add(s);
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.TopBySelf(10));
    benchmark::DoNotOptimize(t.TopByEdge(10));
    benchmark::DoNotOptimize(t.TopByTotal(10));
  }
  state.counters["nodes"] = static_cast<double>(t.node_count());
}
BENCHMARK(BM_PcctTop10);

}  // namespace
}  // namespace pathprof::profiles

BENCHMARK_MAIN();
