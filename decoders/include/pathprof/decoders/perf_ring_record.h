// One perf record as the kernel writes it into a perf_event mmap ring (the same layout as a
// perf.data data-section record), parsed with the attr of the event that produced it. The live
// LBR/PT sources use this; the perf.data reader parses whole files with the same parsers.
#pragma once

#include <cstdint>
#include <span>

#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_records.h"

namespace pathprof::decoders {

// A struct perf_event_attr of any ABI size (as perf_event_open took it).
PerfEventAttr ParsePerfEventAttrBytes(std::span<const uint8_t> attr_bytes);
// The bytes of `attr` at the newest size this project knows (what perf_event_open takes).
std::vector<uint8_t> PerfEventAttrBytes(const PerfEventAttr& attr);

// Parses `record` (header included, exactly header.size bytes) with `attr`. Byte spans in the
// result point into `record`. A record whose size disagrees with its header or whose body runs
// short is an error naming `what` and the record type.
Result<PerfRecord> ParseRingRecord(std::span<const uint8_t> record, const PerfEventAttr& attr,
                                   const char* what = "perf ring");

}  // namespace pathprof::decoders
