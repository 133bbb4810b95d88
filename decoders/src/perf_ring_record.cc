#include "pathprof/decoders/perf_ring_record.h"

#include <cstring>
#include <string>

#include "perf_data_internal.h"

namespace pathprof::decoders {

PerfEventAttr ParsePerfEventAttrBytes(std::span<const uint8_t> attr_bytes) {
  return perf_internal::ParseAttr(attr_bytes);
}

std::vector<uint8_t> PerfEventAttrBytes(const PerfEventAttr& attr) {
  // 120: PERF_ATTR_SIZE_VER7 (through aux_sample_size), the last field ParseAttr knows.
  return perf_internal::SerializeAttr(attr, 120);
}

Result<PerfRecord> ParseRingRecord(std::span<const uint8_t> record, const PerfEventAttr& attr,
                                   const char* what) {
  const std::string name = what;
  if (record.size() < perf::kRecordHeaderSize)
    return perf_internal::Truncated(name, 0, "record shorter than its 8-byte header");
  PerfRecord out;
  std::memcpy(&out.type, record.data(), 4);
  std::memcpy(&out.misc, record.data() + 4, 2);
  std::memcpy(&out.size, record.data() + 6, 2);
  if (out.size != record.size())
    return perf_internal::Corrupt(name, 0,
                                  "record of type " + std::to_string(out.type) + " says size " +
                                      std::to_string(out.size) + " but holds " +
                                      std::to_string(record.size()) + " bytes");
  perf_internal::Cursor body(record.subspan(perf::kRecordHeaderSize), perf::kRecordHeaderSize);
  if (out.type == perf::kRecordSample) {
    PATHPROF_RETURN_IF_ERROR(
        perf_internal::ParseSample(body, attr, name, &out.body.emplace<PerfSample>()));
    return out;
  }
  // The ring holds only this event's records, so every kernel record carries its trailer; AUX
  // bytes live in the AUX area, never after a record (nothing follows).
  uint64_t extra = 0;
  PATHPROF_RETURN_IF_ERROR(
      perf_internal::ParseNonSample(out.type, out.misc, body, &attr, {}, name, &out.body, &extra));
  return out;
}

}  // namespace pathprof::decoders
