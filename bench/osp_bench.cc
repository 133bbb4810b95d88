// OSP reservoir cost per block: the skip/sample loop against a loop that only reads the block
// stream (Oren, ch. 2.2: skipping overhead alpha_2 per block, sampling overhead alpha_1 * rho * l).
// Run: build/bin/osp_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "pathprof/profiles/osp_report.h"
#include "pathprof/profiles/osp_sampler.h"

namespace pathprof::profiles {
namespace {

constexpr size_t kBlocks = 1 << 20;

// A looping program's block stream: an inner loop with an if/else, an outer loop calling one of
// a few cold functions (the same shape as tests/profiles/osp_accuracy_test.cc).
const std::vector<BlockId>& Stream() {
  static const std::vector<BlockId> stream = [] {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<BlockId> out;
    while (out.size() < kBlocks) {
      out.push_back(0x401000);
      do {
        out.push_back(0x401100);
        out.push_back(0x401110);
        out.push_back(u(rng) < 0.8 ? 0x401120 : 0x401130);
        out.push_back(0x401140);
      } while (u(rng) < 0.9);
      const BlockId fn = 0x402000 + 0x100 * (rng() % 6);
      out.push_back(fn);
      for (uint64_t i = 0, n = 1 + rng() % 3; i < n; ++i) out.push_back(fn + 0x10);
      out.push_back(0x401300);
    }
    out.resize(kBlocks);
    return out;
  }();
  return stream;
}

std::vector<BranchBatch> Batches() {
  std::vector<BranchBatch> batches;
  const auto& s = Stream();
  for (size_t at = 0; at < s.size(); at += 4096) {
    BranchBatch b;
    b.gap_before = at == 0;
    for (size_t i = at; i < at + 4096 && i < s.size(); ++i) {
      BranchEvent e;
      e.from = s[i] - 4;
      e.to = s[i];
      b.events.push_back(e);
    }
    batches.push_back(std::move(b));
  }
  return batches;
}

std::unique_ptr<OspReservoir> Reservoir(double f) {
  OspConfig c;
  // Room for every distinct subpath of the stream, so f stays at the rate under test (a full
  // table would raise f and turn every run into the skip-only regime).
  c.max_entries = 1 << 18;
  c.expected_blocks = 0;
  c.min_f = f;
  return std::move(OspReservoir::Create(c)).value();
}

void SetCounters(benchmark::State& state, const OspReservoir* r) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBlocks));
  if (r == nullptr) return;
  const OspStats s = r->stats();
  state.counters["f_end"] = s.f;
  state.counters["entries"] = static_cast<double>(s.entries);
  state.counters["ns_per_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBlocks),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Baseline: read every block id once.
void BM_ReadBlocks(benchmark::State& state) {
  const auto& s = Stream();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (BlockId b : s) {
      sum += b;
      benchmark::DoNotOptimize(sum);
    }
  }
  SetCounters(state, nullptr);
  state.counters["ns_per_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBlocks),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReadBlocks);

// fig. 2.1 as written: enterBlock once per block.
void BM_OspFeedBlock(benchmark::State& state) {
  auto r = Reservoir(static_cast<double>(state.range(0)));
  OspThreadSampler sampler(r.get(), 1);
  const auto& s = Stream();
  for (auto _ : state) {
    for (BlockId b : s) sampler.FeedBlock(b);
  }
  sampler.Flush();
  SetCounters(state, r.get());
}
BENCHMARK(BM_OspFeedBlock)->Arg(2)->Arg(40)->Arg(1000)->Arg(100000);

// The same stream handed over in spans: skipped runs are jumped over in O(1).
void BM_OspFeedBlocks(benchmark::State& state) {
  auto r = Reservoir(static_cast<double>(state.range(0)));
  OspThreadSampler sampler(r.get(), 1);
  const auto& s = Stream();
  for (auto _ : state) {
    for (size_t at = 0; at < s.size(); at += 4096) {
      sampler.FeedBlocks(std::span<const BlockId>(s).subspan(at, 4096));
    }
  }
  SetCounters(state, r.get());
}
BENCHMARK(BM_OspFeedBlocks)->Arg(2)->Arg(40)->Arg(1000)->Arg(100000);

// Baseline for batches: read every branch's target.
void BM_ReadBatches(benchmark::State& state) {
  const auto batches = Batches();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const auto& b : batches) {
      ForEachBlock(b, [&sum](BlockId id) {
        sum += id;
        benchmark::DoNotOptimize(sum);
      });
    }
  }
  SetCounters(state, nullptr);
  state.counters["ns_per_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBlocks),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReadBatches);

void BM_OspFeedBatches(benchmark::State& state) {
  const auto batches = Batches();
  auto r = Reservoir(static_cast<double>(state.range(0)));
  OspThreadSampler sampler(r.get(), 1);
  for (auto _ : state) {
    for (const auto& b : batches) sampler.Feed(b);
  }
  SetCounters(state, r.get());
}
BENCHMARK(BM_OspFeedBatches)->Arg(40)->Arg(1000)->Arg(100000);

// The table's mutex under contention: every thread feeds its own sampler into one reservoir at
// f = 2 (densest) or 40, with thread 0 also taking a top-10 report once per pass (1 Mi blocks).
std::unique_ptr<OspReservoir> g_shared;
void BM_OspSharedReservoir(benchmark::State& state) {
  if (state.thread_index() == 0) g_shared = Reservoir(static_cast<double>(state.range(0)));
  OspThreadSampler* sampler = nullptr;
  for (auto _ : state) {
    if (sampler == nullptr) {
      sampler = new OspThreadSampler(g_shared.get(), static_cast<uint64_t>(state.thread_index()));
    }
    const auto& s = Stream();
    for (size_t at = 0; at < s.size(); at += 4096) {
      sampler->FeedBlocks(std::span<const BlockId>(s).subspan(at, 4096));
      if (state.thread_index() == 0 && at == 0) {
        benchmark::DoNotOptimize(BuildOspReport(*g_shared, {}));
      }
    }
  }
  delete sampler;
  if (state.thread_index() == 0) state.counters["f_end"] = g_shared->f();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBlocks));
  state.counters["ns_per_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBlocks),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_OspSharedReservoir)->Arg(2)->Arg(40)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace pathprof::profiles

BENCHMARK_MAIN();
