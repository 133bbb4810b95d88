// What a live perf source (LBR, Intel PT) lost and why, by reason, so the pipeline can put every
// loss in its target's accounting. Reasons are stable snake_case names ("perf_lost_records",
// "lbr_range_unconditional_in_range", "pt_aux_truncated", ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace pathprof::collectors {

struct LiveSourceCounters {
  uint64_t records = 0;                           // ring records parsed
  uint64_t windows = 0;                           // batches handed to the sink
  uint64_t events = 0;                            // branch events in them
  std::map<std::string, uint64_t> drops;          // data that never became events
  std::map<std::string, uint64_t> decode_errors;  // data that could not be decoded
};

}  // namespace pathprof::collectors
