// Profiles built straight from a branch stream's blocks and calls (no path engine), behind
// `pathctl sim --subpaths` and `--calls`, each scored against exact counts of the same stream:
//  subpaths: the OSP reservoir's report ([Oren 2002], see docs/references.md): the top hot
//            subpaths with their blocks, estimate and Chernoff error bound at a confidence; a
//            second pass over the stream counts the reported subpaths exactly.
//  calls:    hot call pairs and hot methods ([HPS 2005]), from the whole stream or from its
//            bursty or window samples, with the overlap and HPS overlap against the exact counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/batch_source.h"
#include "pathprof/pipeline/offline_sim.h"
#include "pathprof/profiles/osp_report.h"
#include "pathprof/profiles/osp_reservoir.h"

namespace pathprof::pipeline {

struct StreamProfileOptions {
  bool subpaths = false;
  bool calls = false;
  size_t top = 10;  // subpaths, call pairs and methods listed
  // The reservoir's settings; expected_blocks is set from the stream.
  profiles::OspConfig osp;
  double confidence = 0.95;  // of the subpaths' error bounds
  // How calls are sampled: bursty ([HPS 2005]), or windows of `window` taken branches one every
  // window * period; neither: the whole stream.
  std::optional<hwmodel::BurstyConfig> bursty;
  uint64_t window = 0, period = 0;
};

struct ScoredSubpath {
  profiles::OspReportEntry entry;
  uint64_t exact = 0;
  double error = 0;  // (estimate - exact) / exact; 0 when never seen
  bool within_bound = false;
};

struct SubpathProfile {
  profiles::OspReport report;
  std::vector<ScoredSubpath> rows;  // the report's entries, in its order
  uint32_t max_length = 0;
  size_t covered = 0;             // rows whose interval holds the exact count
  double median_error_top10 = 0;  // |error|, over the first min(10, rows) rows
};

struct RankedCallKey {
  std::string key;  // "0xsite->0xtarget" or "0xfunction", as tables print it
  // The same, as numbers: a call pair's call site and target, or a method's entry (`to`).
  uint64_t from = 0, to = 0;
  double estimate = 0;
  double exact = 0;
  size_t exact_rank = 0;  // 0: never seen in the exact counts
};

struct CallRanking {
  size_t distinct_exact = 0, distinct_estimate = 0;
  double overlap = 0, hps_overlap = 0;
  std::vector<RankedCallKey> top;
};

struct CallProfile {
  SimMode mode = SimMode::kFull;  // how calls were counted: every one, bursts or windows
  double sampling_period = 1;
  uint64_t calls_exact = 0, calls_sampled = 0;
  CallRanking pairs, methods;
};

struct StreamProfiles {
  uint64_t branches = 0;
  SubpathProfile subpaths;  // filled with options.subpaths
  CallProfile calls;        // filled with options.calls
};

// Reads the stream once to size the reservoir (with subpaths), once to profile and once more to
// count the reported subpaths. Fails with the stream's error or a refused configuration.
Result<StreamProfiles> ProfileStream(const StreamProfileOptions& options,
                                     const OpenBatchesFn& open);

}  // namespace pathprof::pipeline
