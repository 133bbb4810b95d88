// The live LBR source: a PerfEventSource (PERF_SAMPLE_BRANCH_STACK samples of one task and,
// through inherit, its threads) whose ring records are parsed with the event's attr and whose
// branch stacks go through the LBR reconstructor, one BranchBatch per reconstructed window.
// The record handling does not need a PMU: OverRing() drives it from any ring (tests use a fake
// mmap area filled with the records of a perf.data file).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "pathprof/collectors/live_source_counters.h"
#include "pathprof/collectors/perf_event_source.h"
#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/lbr_reconstruct.h"
#include "pathprof/decoders/perf_data_records.h"
#include "pathprof/decoders/process_code_map.h"

namespace pathprof::collectors {

using BranchWindowSink = std::function<void(const BranchBatch&)>;

struct LbrSourceOptions {
  pid_t pid = -1;
  uint64_t sample_period = 100003;
  int data_pages = 256;                // 1 MiB ring: about 40 ms of samples at the default period
  bool seed_from_proc_maps = true;     // mappings made before the event opened
  decoders::ImageStoreOptions images;  // where the target's binaries are found
};

class LbrSource {
 public:
  // Opens the event on the task (fails with the kernel's reason on a host without LBR).
  static Result<std::unique_ptr<LbrSource>> Start(const LbrSourceOptions& options,
                                                  BranchWindowSink sink);
  // Drives the same record handling from `ring` (which must outlive the source), with the attr
  // the records were written under.
  static std::unique_ptr<LbrSource> OverRing(PerfRing* ring, const decoders::PerfEventAttr& attr,
                                             const LbrSourceOptions& options,
                                             BranchWindowSink sink);
  ~LbrSource();

  // Reads every complete record in the ring. Bad records are counted, never fatal.
  void Poll();
  // Copies of the counters (safe to call from another thread than Poll()'s).
  LiveSourceCounters counters() const;
  decoders::LbrStats lbr_stats() const;

 private:
  LbrSource(PerfRing* ring, const decoders::PerfEventAttr& attr, const LbrSourceOptions& options,
            BranchWindowSink sink);
  void OnRecord(std::span<const uint8_t> record);
  void SyncCounters();

  std::unique_ptr<PerfEventSource> event_;
  PerfRing* ring_;
  decoders::PerfEventAttr attr_;
  LbrSourceOptions options_;
  BranchWindowSink sink_;
  decoders::ImageStore images_;
  decoders::ProcessCodeMap code_;
  decoders::LbrReconstructor reconstructor_;
  std::vector<decoders::LbrEntry> entries_;
  std::vector<BranchBatch> batches_;
  LiveSourceCounters local_;  // Poll()'s thread only
  mutable std::mutex mu_;
  LiveSourceCounters shared_;
  decoders::LbrStats shared_lbr_;
};

// The reasons perf itself reports through ring records (LOST, LOST_SAMPLES, THROTTLE) and the
// ring's malformed headers, added to `counters`. Shared by the LBR and PT sources.
void CountPerfRecordLoss(const decoders::PerfRecord& record, LiveSourceCounters* counters);

}  // namespace pathprof::collectors
