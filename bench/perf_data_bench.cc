// perf.data reading speed on real LBR recordings, in branch entries per second; compare with
// `perf script -F ip,brstack` on the same file (docs/performance.md has the command and ratio).
#include <benchmark/benchmark.h>

#include <string>

#include "pathprof/decoders/perf_data_reader.h"
#include "perf_data_writer.h"

namespace {

using pathprof::decoders::PerfDataReader;
using pathprof::decoders::PerfRecord;
using pathprof::decoders::PerfSample;

void ReadAll(benchmark::State& state, const std::string& file) {
  const std::string path = std::string(PATHPROF_SHARED_DIR) + "/corpus/" + file;
  uint64_t entries = 0, bytes = 0;
  for (auto _ : state) {
    auto reader = PerfDataReader::Open(path);
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      return;
    }
    PerfRecord rec;
    uint64_t sum = 0;
    while (true) {
      auto more = reader->Next(&rec);
      if (!more.ok() || !*more) break;
      if (auto* s = std::get_if<PerfSample>(&rec.body)) {
        for (const auto& b : s->branches) sum += b.from;
      }
    }
    benchmark::DoNotOptimize(sum);
    entries += reader->stats().branch_entries;
    bytes += reader->info().data_size;
  }
  state.counters["entries/s"] = benchmark::Counter(double(entries), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(bytes));
}

void BM_ReadPropellerLbr(benchmark::State& state) {
  ReadAll(state, "lbr/autofdo/propeller_sample_1.perfdata1");
}
BENCHMARK(BM_ReadPropellerLbr)->Unit(benchmark::kMillisecond);

void BM_ReadAutofdoTestLbr(benchmark::State& state) {
  ReadAll(state, "lbr/autofdo/test.lbr");
}
BENCHMARK(BM_ReadAutofdoTestLbr)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
