// LBR reconstruction throughput on the corpus recordings: branch records per second through
// the reconstructor (warm branch cache, samples preloaded), and the whole replay of a file
// (perf.data parsing + image lookup + reconstruction). The whole-process comparison against
// `perf script -F ip,brstackinsn` is scripts/bench-lbr-vs-perf.sh.
#include <benchmark/benchmark.h>

#include <string>
#include <variant>
#include <vector>

#include "pathprof/decoders/lbr_replay.h"
#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/process_code_map.h"

namespace {

using namespace pathprof::decoders;

const std::string kCorpus = std::string(PATHPROF_SHARED_DIR) + "/corpus/lbr/autofdo/";

struct Loaded {
  std::vector<std::vector<LbrEntry>> stacks;
  std::vector<LbrSample> samples;
  std::vector<std::pair<uint32_t, Mapping>> maps;
};

Loaded Load(const std::string& file) {
  Loaded l;
  auto reader = PerfDataReader::Open(file);
  if (!reader.ok()) return l;
  PerfRecord rec;
  while (true) {
    auto more = reader->Next(&rec);
    if (!more.ok() || !*more) break;
    if (auto* s = std::get_if<PerfSample>(&rec.body)) {
      if (s->branches.empty()) continue;
      std::vector<LbrEntry> e;
      for (const auto& b : s->branches) e.push_back({b.from, b.to, b.cycles(), b.mispredicted()});
      l.stacks.push_back(std::move(e));
      LbrSample sample;
      sample.pid = s->pid;
      sample.tid = s->tid;
      sample.ip = s->ip;
      l.samples.push_back(sample);
    } else if (auto* m = std::get_if<PerfMmap>(&rec.body)) {
      Mapping mapping;
      mapping.start = m->start;
      mapping.len = m->len;
      mapping.pgoff = m->pgoff;
      mapping.path = m->filename;
      l.maps.push_back({m->pid, std::move(mapping)});
    }
  }
  for (size_t i = 0; i < l.samples.size(); ++i) l.samples[i].entries = l.stacks[i];
  return l;
}

void BM_ReconstructGzipLbr(benchmark::State& state) {
  static const Loaded l = Load(kCorpus + "test.lbr");
  ImageStoreOptions opt;
  opt.binary_dir = kCorpus;
  opt.use_host_paths = false;
  ImageStore store(opt);
  ProcessCodeMap code(&store);
  for (const auto& [pid, m] : l.maps) code.AddMapping(pid, m);
  LbrReconstructor r(&code);
  std::vector<pathprof::BranchBatch> out;
  uint64_t entries = 0;
  for (auto _ : state) {
    for (const LbrSample& s : l.samples) {
      out.clear();
      r.Reconstruct(s, &out);
      entries += s.entries.size();
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(entries));
  state.counters["instructions"] = static_cast<double>(r.stats().instructions);
}
BENCHMARK(BM_ReconstructGzipLbr)->Unit(benchmark::kMillisecond);

void BM_ReplayWholeFile(benchmark::State& state) {
  LbrReplayOptions opt;
  opt.images.binary_dir = kCorpus;
  opt.images.use_host_paths = false;
  uint64_t entries = 0;
  for (auto _ : state) {
    auto r = ReplayLbr(kCorpus + "test.lbr", opt);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    entries += r->lbr.entries;
  }
  state.SetItemsProcessed(static_cast<int64_t>(entries));
}
BENCHMARK(BM_ReplayWholeFile)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
