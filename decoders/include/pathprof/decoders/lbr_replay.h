// Replays the LBR samples of a perf.data file through the reconstructor: MMAP/MMAP2 and FORK
// records build the processes' address spaces, images come from an ImageStore (binary dir,
// build-ids), and every sample with a branch stack becomes BranchBatches. Call-stack-mode stacks
// are refused (counted), non-x86-64 recordings are refused with an error.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/lbr_reconstruct.h"
#include "pathprof/decoders/perf_data_reader.h"

namespace pathprof::decoders {

struct LbrReplayOptions {
  ImageStoreOptions images;
  std::optional<uint32_t> pid;               // only this process's samples
  LbrReconstructor::RangeObserver on_range;  // optional
};

struct LbrReplayResult {
  LbrStats lbr;
  ImageStoreStats images;
  uint64_t records = 0;
  uint64_t samples_without_branches = 0;
  uint64_t samples_other_pid = 0;
  uint64_t mmaps = 0;
};

// `sink` (optional) receives each sample's batches; it may move from them.
Result<LbrReplayResult> ReplayLbr(const std::string& perf_data, const LbrReplayOptions& options,
                                  const std::function<void(std::vector<BranchBatch>&)>& sink = {});
// The same over a reader already open (on bytes read once from a pipe, for example).
Result<LbrReplayResult> ReplayLbr(PerfDataReader* reader, const LbrReplayOptions& options,
                                  const std::function<void(std::vector<BranchBatch>&)>& sink = {});

}  // namespace pathprof::decoders
