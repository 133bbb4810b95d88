// perf_event_attr of every ABI version, and the sample_id_all trailer it implies.
#include <cstring>

#include "perf_data_internal.h"

namespace pathprof::decoders::perf_internal {
namespace {

template <typename T>
void ReadField(std::span<const uint8_t> b, size_t offset, T* v) {
  *v = 0;
  if (offset + sizeof(T) <= b.size()) std::memcpy(v, b.data() + offset, sizeof(T));
}

template <typename T>
void WriteField(std::vector<uint8_t>& b, size_t offset, T v) {
  if (offset + sizeof(T) <= b.size()) std::memcpy(b.data() + offset, &v, sizeof(T));
}

}  // namespace

PerfEventAttr ParseAttr(std::span<const uint8_t> b) {
  PerfEventAttr a;
  ReadField(b, 0, &a.type);
  ReadField(b, 4, &a.size);
  ReadField(b, 8, &a.config);
  ReadField(b, 16, &a.sample_period);
  ReadField(b, 24, &a.sample_type);
  ReadField(b, 32, &a.read_format);
  ReadField(b, 40, &a.flags);
  ReadField(b, 48, &a.wakeup_events);
  ReadField(b, 52, &a.bp_type);
  ReadField(b, 56, &a.config1);
  ReadField(b, 64, &a.config2);
  ReadField(b, 72, &a.branch_sample_type);
  ReadField(b, 80, &a.sample_regs_user);
  ReadField(b, 88, &a.sample_stack_user);
  ReadField(b, 92, &a.clockid);
  ReadField(b, 96, &a.sample_regs_intr);
  ReadField(b, 104, &a.aux_watermark);
  ReadField(b, 108, &a.sample_max_stack);
  ReadField(b, 112, &a.aux_sample_size);
  return a;
}

std::vector<uint8_t> SerializeAttr(const PerfEventAttr& a, uint32_t size) {
  std::vector<uint8_t> b(size, 0);
  WriteField(b, 0, a.type);
  WriteField(b, 4, size);
  WriteField(b, 8, a.config);
  WriteField(b, 16, a.sample_period);
  WriteField(b, 24, a.sample_type);
  WriteField(b, 32, a.read_format);
  WriteField(b, 40, a.flags);
  WriteField(b, 48, a.wakeup_events);
  WriteField(b, 52, a.bp_type);
  WriteField(b, 56, a.config1);
  WriteField(b, 64, a.config2);
  WriteField(b, 72, a.branch_sample_type);
  WriteField(b, 80, a.sample_regs_user);
  WriteField(b, 88, a.sample_stack_user);
  WriteField(b, 92, a.clockid);
  WriteField(b, 96, a.sample_regs_intr);
  WriteField(b, 104, a.aux_watermark);
  WriteField(b, 108, a.sample_max_stack);
  WriteField(b, 112, a.aux_sample_size);
  return b;
}

uint64_t SampleIdSize(uint64_t t) {
  uint64_t n = 0;
  for (uint64_t bit : {perf::kSampleTid, perf::kSampleTime, perf::kSampleId, perf::kSampleStreamId,
                       perf::kSampleCpu, perf::kSampleIdentifier}) {
    if (t & bit) n += 8;
  }
  return n;
}

bool ParseSampleId(std::span<const uint8_t> trailer, uint64_t t, PerfSampleId* out) {
  Cursor c(trailer, 0);
  out->present = t & (perf::kSampleTid | perf::kSampleTime | perf::kSampleId |
                      perf::kSampleStreamId | perf::kSampleCpu | perf::kSampleIdentifier);
  uint32_t pad = 0;
  if ((t & perf::kSampleTid) && !(c.U32(&out->pid) && c.U32(&out->tid))) return false;
  if ((t & perf::kSampleTime) && !c.U64(&out->time)) return false;
  if ((t & perf::kSampleId) && !c.U64(&out->id)) return false;
  if ((t & perf::kSampleStreamId) && !c.U64(&out->stream_id)) return false;
  if ((t & perf::kSampleCpu) && !(c.U32(&out->cpu) && c.U32(&pad))) return false;
  if ((t & perf::kSampleIdentifier) && !c.U64(&out->id)) return false;
  return true;
}

int SampleIdPosFromStart(uint64_t t) {
  if (t & perf::kSampleIdentifier) return 0;
  if (!(t & perf::kSampleId)) return -1;
  int pos = 0;
  for (uint64_t bit : {perf::kSampleIp, perf::kSampleTid, perf::kSampleTime, perf::kSampleAddr}) {
    if (t & bit) ++pos;
  }
  return pos;
}

int SampleIdPosFromEnd(uint64_t t) {
  if (t & perf::kSampleIdentifier) return 1;
  if (!(t & perf::kSampleId)) return -1;
  int pos = 1;
  if (t & perf::kSampleStreamId) ++pos;
  if (t & perf::kSampleCpu) ++pos;
  return pos;
}

Status Corrupt(const std::string& name, uint64_t offset, const std::string& what) {
  return Error(ErrorCode::kCorrupt, "perf.data " + name + ": " + what + " at offset " +
                                        std::to_string(offset) +
                                        "; the file does not follow the perf.data format");
}

Status Truncated(const std::string& name, uint64_t offset, const std::string& what) {
  return Error(ErrorCode::kTruncated, "perf.data " + name + ": " + what + " at offset " +
                                          std::to_string(offset) +
                                          "; the file ends early (was the recording cut short?)");
}

}  // namespace pathprof::decoders::perf_internal
