// What decoding an import in the sandboxed helper (pathprof-import, pipeline/src/
// recording_import.h) costs against decoding it in the calling process, as the daemon did
// before: the same AnalyzeFile both ways, on a real LBR recording (AutoFDO's propeller sample,
// its binary read by build-id from a binary directory) and on a synthesized continuous stream
// (4 M branch events in long batches: the wire's per-event cost at its largest). Run with
// --benchmark_enable_random_interleaving=true --benchmark_repetitions=N: docs/performance.md
// reports the ratio of the medians.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "pathprof/core/pbs.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace {

namespace fs = std::filesystem;
namespace pp = pathprof::pipeline;

const std::string kCorpus = std::string(PATHPROF_SHARED_DIR) + "/corpus/";

// A folder the helper (nobody, when this runs as root) can read, removed at exit.
const std::string& ScratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/pathprof-import-bench-XXXXXX";
    std::string d = mkdtemp(tmpl);
    chmod(d.c_str(), 0755);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return dir;
}

void Run(benchmark::State& state, const std::string& path, pp::AnalyzeOptions options) {
  if (state.range(0) == 1) options.decode_in_helper_for = pathprof::decoders::FileCredentials{};
  uint64_t events = 0;
  for (auto _ : state) {
    auto r = pp::AnalyzeFile(path, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    events += r->decode.events;
  }
  state.counters["events/s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
  state.SetLabel(state.range(0) == 1 ? "helper" : "here");
}

void BM_ImportPropellerLbr(benchmark::State& state) {
  const std::string binary = ScratchDir() + "/propeller_sample_1.bin";
  std::error_code ec;
  if (!fs::exists(binary))
    fs::copy_file(kCorpus + "lbr/autofdo/propeller_sample_1.bin", binary, ec);
  if (ec) {
    state.SkipWithError(("corpus absent: " + ec.message()).c_str());
    return;
  }
  chmod(binary.c_str(), 0644);
  pp::AnalyzeOptions o;
  o.binary_dir = ScratchDir();
  Run(state, kCorpus + "lbr/autofdo/propeller_sample_1.perfdata1", o);
}
BENCHMARK(BM_ImportPropellerLbr)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ImportContinuousStream(benchmark::State& state) {
  const std::string path = ScratchDir() + "/stream.pbs";
  if (!fs::exists(path)) {
    // Four threads' loops of 256 K iterations each, a batch of 64 K events at a time.
    pathprof::PbsContents c;
    for (uint32_t tid = 1; tid <= 4; ++tid) {
      for (int part = 0; part < 16; ++part) {
        pathprof::BranchBatch b;
        b.pid = 1;
        b.tid = tid;
        b.gap_before = part == 0;
        for (int i = 0; i < 16384; ++i) {
          const uint64_t base = 0x401000 + 0x40 * uint64_t(i % 5);
          b.events.push_back(
              {base + 8, base + 16, 0, 2, pathprof::BranchKind::kConditional, (i % 3) == 0, false});
          b.events.push_back(
              {base + 20, base + 0x100, 0, 3, pathprof::BranchKind::kDirectCall, true, false});
          b.events.push_back(
              {base + 0x104, base + 25, 0, 1, pathprof::BranchKind::kReturn, true, false});
          b.events.push_back(
              {base + 30, 0x401000, 0, 4, pathprof::BranchKind::kConditional, true, false});
        }
        c.batches.push_back(std::move(b));
      }
    }
    if (auto st = pathprof::WritePbsFile(path, c); !st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      return;
    }
    chmod(path.c_str(), 0644);
  }
  Run(state, path, {});
}
BENCHMARK(BM_ImportContinuousStream)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
