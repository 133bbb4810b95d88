// Private to the perf.data reader: a bounded little-endian cursor and the per-part parsers.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/perf_data_records.h"

namespace pathprof::decoders::perf_internal {

// Reads little-endian integers from a span; `base` is the span's offset in the input so that
// errors can name absolute offsets. Every read checks the remaining length first.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, uint64_t base) : bytes_(bytes), base_(base) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  size_t pos() const { return pos_; }
  uint64_t offset() const { return base_ + pos_; }
  bool empty() const { return pos_ == bytes_.size(); }

  bool U8(uint8_t* v) { return Fixed(v); }
  bool U16(uint16_t* v) { return Fixed(v); }
  bool U32(uint32_t* v) { return Fixed(v); }
  bool U64(uint64_t* v) { return Fixed(v); }
  bool Skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += n;
    return true;
  }
  bool Bytes(uint64_t n, std::span<const uint8_t>* out) {
    if (n > remaining()) return false;
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  // n u64 values; n is bounded by the remaining bytes before anything is allocated.
  bool U64s(uint64_t n, std::vector<uint64_t>* out) {
    if (n > remaining() / 8) return false;
    out->resize(n);
    for (auto& v : *out) Fixed(&v);
    return true;
  }
  // A NUL-padded string filling the next n bytes (cut at the first NUL).
  bool String(uint64_t n, std::string* out) {
    std::span<const uint8_t> b;
    if (!Bytes(n, &b)) return false;
    const void* nul = std::memchr(b.data(), 0, b.size());
    size_t len = nul ? static_cast<const uint8_t*>(nul) - b.data() : b.size();
    out->assign(reinterpret_cast<const char*>(b.data()), len);
    return true;
  }
  std::span<const uint8_t> Rest() const { return bytes_.subspan(pos_); }

 private:
  template <typename T>
  bool Fixed(T* v) {
    if (sizeof(T) > remaining()) return false;
    // The host is little-endian (x86-64, aarch64); big-endian files are refused up front.
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  std::span<const uint8_t> bytes_;
  uint64_t base_ = 0;
  size_t pos_ = 0;
};

Status Corrupt(const std::string& name, uint64_t offset, const std::string& what);
Status Truncated(const std::string& name, uint64_t offset, const std::string& what);

// perf_event_attr of any size; `bytes` is exactly the stored attr.
PerfEventAttr ParseAttr(std::span<const uint8_t> bytes);
// Serializes an attr at the given size (the writer's half of ParseAttr).
std::vector<uint8_t> SerializeAttr(const PerfEventAttr& attr, uint32_t size);

// Bytes of the sample_id_all trailer for a sample_type.
uint64_t SampleIdSize(uint64_t sample_type);
// Parses the trailer from the last SampleIdSize bytes of a record body.
bool ParseSampleId(std::span<const uint8_t> trailer, uint64_t sample_type, PerfSampleId* out);

// Where the event id sits, for picking the attr of a record when there are several:
// u64 index from the start of a sample body, and from the end of a non-sample body (1 = last).
// -1 when the sample_type has neither ID nor IDENTIFIER.
int SampleIdPosFromStart(uint64_t sample_type);
int SampleIdPosFromEnd(uint64_t sample_type);

// Parses a PERF_RECORD_SAMPLE body (after the 8-byte header). On failure returns a status whose
// message names what ran past the record's end, at an absolute offset.
Status ParseSample(Cursor& c, const PerfEventAttr& attr, const std::string& name, PerfSample* out);

// Parses a record body other than SAMPLE into *out. `attr` gives the sample_id_all trailer
// layout (nullptr when no attr applies). `after` is what follows the record in the input
// (AUXTRACE data, tracing data); *extra receives how many of those bytes belong to the record.
Status ParseNonSample(uint32_t type, uint16_t misc, Cursor& body, const PerfEventAttr* attr,
                      std::span<const uint8_t> after, const std::string& name, PerfRecordBody* out,
                      uint64_t* extra);

// Applies one header feature section to `info`.
Status ApplyFeature(int feature, Cursor& c, const std::string& name, PerfDataInfo* info);
// Parses one build-id entry (record layout), body after the 8-byte header.
Status ParseBuildId(uint16_t misc, Cursor& body, const std::string& name, PerfBuildId* out);

}  // namespace pathprof::decoders::perf_internal
