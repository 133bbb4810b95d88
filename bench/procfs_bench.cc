// Listing every process of this host (what the daemon's ListTargets and every continuous window
// do): each process's owner, comm, executable and cgroup read afresh, against the identity cache
// that re-reads only a process's stat while its start time and comm are unchanged.
#include <benchmark/benchmark.h>

#include "pathprof/core/process_identity_cache.h"
#include "pathprof/core/procfs.h"

namespace {

using pathprof::procfs::ProcessIdentityCache;
using pathprof::procfs::Procfs;

void BM_ListHostProcessesFresh(benchmark::State& state) {
  size_t n = 0;
  for (auto _ : state) {
    // max_age 0: every lookup reads the process in full.
    ProcessIdentityCache fresh(Procfs::Host(),
                               {.max_entries = 1 << 16, .max_age = std::chrono::milliseconds(0)});
    n = fresh.All().size();
    benchmark::DoNotOptimize(n);
  }
  state.counters["processes"] = static_cast<double>(n);
}
BENCHMARK(BM_ListHostProcessesFresh)->Unit(benchmark::kMicrosecond);

void BM_ListHostProcessesCached(benchmark::State& state) {
  ProcessIdentityCache cache(Procfs::Host(),
                             {.max_entries = 1 << 16, .max_age = std::chrono::hours(1)});
  size_t n = cache.All().size();
  for (auto _ : state) {
    n = cache.All().size();
    benchmark::DoNotOptimize(n);
  }
  state.counters["processes"] = static_cast<double>(n);
  state.counters["hit_ratio"] =
      static_cast<double>(cache.stats().hits) /
      static_cast<double>(std::max<uint64_t>(1, cache.stats().hits + cache.stats().misses));
}
BENCHMARK(BM_ListHostProcessesCached)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
