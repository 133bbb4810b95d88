// The offline pipeline behind `pathctl analyze`: reads a recording (perf.data with LBR samples,
// perf.data with Intel PT AUX data, or a .pbs branch stream), decodes it into branch batches and
// feeds them to one offline pipeline::ProfileStore per recorded process, with the recorded
// mappings. Every loss on the way (broken LBR windows, dropped entries, PT decode errors) is
// counted in DecodeSummary.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/input_file.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/session_config.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathprof::pipeline {

struct AnalyzeOptions {
  std::string binary_dir;       // like perf's --symfs; empty: recorded paths on this host
  std::optional<uint32_t> pid;  // only this process
  // .pbs only: encode the stream as Intel PT packets and analyze what the PT decoder gives back
  // (exercises the PT route on hosts without PT hardware).
  bool pbs_via_pt = false;
  // Decode only: rebuild and count the branch stream, build no profile (to compare the decoder
  // alone with perf script, which builds none either).
  bool decode_only = false;
  InputLimits limits;  // how much of a pipe or file is read
  // Decode in the sandboxed helper pathprof-import, for this requester (the daemon's imports:
  // the recording is opened with the requester's rights, the helper runs as them, as nobody
  // where they are root, and this process reads only its checked frames). nullopt: decode here
  // (pathctl, which runs as its user).
  std::optional<decoders::FileCredentials> decode_in_helper_for;
  // How long that helper may go without sending a frame before it is taken for hung and
  // stopped (one thread of a large PT trace decodes for seconds; a minute of nothing is a hang).
  int helper_silence_ms = 60'000;
  // How long the helper may run and use the CPU in all: it kills itself then, whatever the
  // code it runs does (a daemon without CAP_KILL cannot kill a helper that became another
  // user). An import of many GiB decodes for minutes; half an hour is a hang.
  uint32_t helper_deadline_ms = 30 * 60'000;
  SessionConfig config;
};

struct DecodeSummary {
  // "perf.data/lbr", "perf.data/intel-pt", "pbs", "pbs/synthesized-pt"
  std::string format;
  uint64_t records = 0;  // perf.data records or .pbs records read
  uint64_t samples = 0;  // LBR samples with a branch stack; PT: AUXTRACE buffers
  uint64_t windows = 0;  // batches handed to the profile stores
  uint64_t events = 0;   // branch events in them
  uint64_t taken = 0;
  uint64_t not_taken = 0;
  uint64_t instructions = 0;                        // sum of BranchEvent.instructions
  std::map<std::string, uint64_t> broken_windows;   // reason -> LBR ranges that broke a window
  std::map<std::string, uint64_t> dropped_entries;  // reason -> LBR entries dropped
  std::map<std::string, uint64_t> decode_errors;    // reason -> count (PT errors, bad records)
  std::map<std::string, uint64_t> counters;         // other named facts (images found, ...)
  // What the caller should tell the user besides the counts: where a damaged input stopped
  // being read, or that PT was decoded with default settings (and why).
  std::vector<std::string> warnings;
};

struct AnalyzeResult {
  DecodeSummary decode;
  std::shared_ptr<SymbolService> symbols;
  // One store per process that had branches, in pid order.
  std::map<uint32_t, std::unique_ptr<ProfileStore>> stores;
};

Result<AnalyzeResult> AnalyzeFile(const std::string& path, const AnalyzeOptions& options);

// The recording at `path` as an ended session named `id` (Session::FromRecording over
// AnalyzeFile's stores): what the daemon's ImportRecording keeps and what pathctl's queries of a
// recording answer from. `warnings` receives DecodeSummary::warnings, for the caller to show.
Result<std::unique_ptr<Session>> SessionFromRecording(std::string id, const std::string& path,
                                                      const AnalyzeOptions& options,
                                                      std::vector<std::string>* warnings);

}  // namespace pathprof::pipeline
