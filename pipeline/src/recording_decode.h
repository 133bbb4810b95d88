// The offline pipeline's two halves, private to pipeline/: decoding a recording into a
// RecordingSink (in this process for pathctl, in pathprof-import for the daemon's imports) and
// the profile stores' sink. offline_analysis.h is what other stages call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/accounting.h"
#include "pathprof/pipeline/offline_analysis.h"
#include "pathprof/pipeline/profile_store.h"

namespace pathprof::pipeline {

// A recorded process as the recording describes it: what its store starts from.
struct RecordedProcess {
  std::string comm;  // empty when the recording names none
  std::vector<decoders::Mapping> mappings;
};

// Where a decode hands what it rebuilt: Begin once, then every batch in order. The profile
// stores are one sink (AnalyzeFile); the import helper's pipe to the daemon is another
// (recording_import.h), so that the daemon never parses a recording itself.
class RecordingSink {
 public:
  virtual ~RecordingSink() = default;
  // Before the first batch: how the batches' windows were drawn and every recorded process.
  virtual Status Begin(BranchWindows windows,
                       const std::map<uint32_t, RecordedProcess>& processes) = 0;
  virtual Status Add(const BranchBatch& batch) = 0;
};

// Reads and decodes the recording at `path` into `sink`: the decode's side of DecodeSummary
// (format, records, samples, losses, counters, warnings; the batches' own counts are the
// sink's to make).
// `input_fd` >= 0: read that descriptor (opened by whoever had the right to: the import helper's
// fd 3) instead of opening `path`, which then only names it in messages; not closed here.
Result<DecodeSummary> DecodeRecording(const std::string& path, int input_fd,
                                      const AnalyzeOptions& options, RecordingSink* sink);

// The profile stores' sink: one offline store per process that has batches, created with its
// recorded mappings; counts the batches' windows, events and instructions into out->decode.
// Honours options.pid and options.decode_only.
class StoreSink final : public RecordingSink {
 public:
  StoreSink(const AnalyzeOptions& options, AnalyzeResult* out) : options_(options), out_(out) {}
  ~StoreSink() override;  // charges the last batches' CPU, before anyone reads the stats
  Status Begin(BranchWindows windows,
               const std::map<uint32_t, RecordedProcess>& processes) override;
  Status Add(const BranchBatch& batch) override;

 private:
  Result<ProfileStore*> For(uint32_t pid);

  CpuCharger cpu_;
  const AnalyzeOptions& options_;
  AnalyzeResult* out_;
  BranchWindows windows_ = BranchWindows::kNone;
  std::map<uint32_t, RecordedProcess> processes_;
};

// What a decode starts from: no stores yet, a symbol service over options.binary_dir.
AnalyzeResult EmptyAnalyzeResult(const AnalyzeOptions& options);

// Adds what a decode summarized to what the sink counted.
void MergeDecodeSummary(DecodeSummary from, DecodeSummary* into);

}  // namespace pathprof::pipeline
