// Intel PT decode throughput: our PtBranchDecoder (blocks walked into taken and not-taken
// BranchEvents) against a bare libipt block-decoder loop (pt_blk_next until the end, nothing
// else) over the same trace and image. The trace is synthesized from an exact ptrace trace of
// examples/heapsort, made once with `pathctl trace --exact` next to this binary (or set
// PATHPROF_PT_BENCH_PBS to any exact .pbs of a program whose files are still on disk).
#include <benchmark/benchmark.h>
#include <intel-pt.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "pathprof/core/pbs.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/pt_decoder.h"
#include "pathprof/decoders/pt_synth.h"

namespace {

using namespace pathprof;
using namespace pathprof::decoders;

std::string BinDir() {
  auto self = procfs::Procfs::Host().Executable(getpid());
  if (!self.ok()) return ".";
  return self->substr(0, self->rfind('/'));
}

struct Input {
  std::string error;
  std::vector<uint8_t> trace;
  uint32_t pid = 0, tid = 0;
  uint64_t exact_events = 0;
  std::shared_ptr<PtImage> image;
};

const Input& GetInput() {
  static Input* in = [] {
    auto* in = new Input;
    std::string pbs = std::getenv("PATHPROF_PT_BENCH_PBS") ? std::getenv("PATHPROF_PT_BENCH_PBS")
                                                           : BinDir() + "/pt_bench_heapsort.pbs";
    if (access(pbs.c_str(), R_OK) != 0) {
      std::string cmd = BinDir() + "/pathctl trace --exact -o " + pbs + " -- " + BinDir() +
                        "/example_heapsort > /dev/null";
      if (std::system(cmd.c_str()) != 0) {
        in->error = "could not make " + pbs + " with: " + cmd;
        return in;
      }
    }
    auto contents = ReadPbsFile(pbs);
    if (!contents.ok()) {
      in->error = contents.status().ToString();
      return in;
    }
    auto traces = SynthesizePt(contents->batches);
    if (!traces.ok() || traces->empty()) {
      in->error = "synthesis failed";
      return in;
    }
    // The largest thread's trace.
    size_t best = 0;
    for (size_t i = 0; i < traces->size(); ++i)
      if ((*traces)[i].bytes.size() > (*traces)[best].bytes.size()) best = i;
    in->trace = (*traces)[best].bytes;
    in->pid = (*traces)[best].pid;
    in->tid = (*traces)[best].tid;
    in->exact_events = (*traces)[best].events;
    auto cache = PtSectionCache::Create();
    in->image = std::make_shared<PtImage>(*cache);
    in->image->AddImages(contents->images);
    return in;
  }();
  return *in;
}

void BM_PtWrapperDecode(benchmark::State& state) {
  const Input& in = GetInput();
  if (!in.error.empty()) {
    state.SkipWithError(in.error.c_str());
    return;
  }
  uint64_t events = 0, slot_misses = 0;
  for (auto _ : state) {
    auto dec = PtBranchDecoder::Create(in.trace, PtDecoderConfig{}, in.image, in.pid, in.tid);
    events = 0;
    Status s = (*dec)->Decode([&](BranchBatch&& b) {
      events += b.events.size();
      benchmark::DoNotOptimize(b.events.data());
      return Status::Ok();
    });
    if (!s.ok() || (*dec)->stats().errors) state.SkipWithError("decode failed");
    slot_misses = (*dec)->stats().block_slot_misses;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.trace.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  state.counters["events"] = static_cast<double>(events);
  state.counters["exact_events"] = static_cast<double>(in.exact_events);
  state.counters["slot_misses"] = static_cast<double>(slot_misses);
}
BENCHMARK(BM_PtWrapperDecode)->Unit(benchmark::kMillisecond);

// The floor: libipt's block decoder alone, events drained, blocks counted, nothing built.
void BM_PtBareLibiptBlocks(benchmark::State& state) {
  const Input& in = GetInput();
  if (!in.error.empty()) {
    state.SkipWithError(in.error.c_str());
    return;
  }
  uint64_t blocks = 0;
  for (auto _ : state) {
    pt_config cfg;
    pt_config_init(&cfg);
    cfg.begin = const_cast<uint8_t*>(in.trace.data());
    cfg.end = const_cast<uint8_t*>(in.trace.data() + in.trace.size());
    pt_block_decoder* dec = pt_blk_alloc_decoder(&cfg);
    pt_blk_set_image(dec, in.image->raw());
    blocks = 0;
    for (;;) {
      int status = pt_blk_sync_forward(dec);
      if (status < 0) break;
      for (;;) {
        while (status & pts_event_pending) {
          pt_event ev;
          status = pt_blk_event(dec, &ev, sizeof ev);
          if (status < 0) break;
        }
        if (status < 0) break;
        pt_block block;
        status = pt_blk_next(dec, &block, sizeof block);
        if (block.ninsn) ++blocks;
        benchmark::DoNotOptimize(block);
        if (status < 0) break;
      }
      if (status == -pte_eos) break;
    }
    pt_blk_free_decoder(dec);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.trace.size()));
  state.counters["blocks"] = static_cast<double>(blocks);
}
BENCHMARK(BM_PtBareLibiptBlocks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
