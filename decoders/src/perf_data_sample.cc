// PERF_RECORD_SAMPLE: the fields sample_type names, in the kernel's fixed order.
#include <bit>
#include <cstdio>

#include "perf_data_internal.h"

namespace pathprof::decoders::perf_internal {
namespace {

Status PastEnd(Cursor& c, const std::string& name, const char* field) {
  return Corrupt(name, c.offset(),
                 std::string("sample field ") + field + " runs past the end of its record");
}

// The READ block: kept raw; only its length matters for walking past it.
bool SkipRead(Cursor& c, uint64_t read_format, std::span<const uint8_t>* out) {
  const size_t start = c.pos();
  std::span<const uint8_t> all = c.Rest();
  const uint64_t per_value =
      8 + ((read_format & perf::kFormatId) ? 8 : 0) + ((read_format & perf::kFormatLost) ? 8 : 0);
  const uint64_t times = ((read_format & perf::kFormatTotalTimeEnabled) ? 8 : 0) +
                         ((read_format & perf::kFormatTotalTimeRunning) ? 8 : 0);
  if (read_format & perf::kFormatGroup) {
    uint64_t nr = 0;
    if (!c.U64(&nr) || !c.Skip(times)) return false;
    if (nr > c.remaining() / per_value) return false;
    if (!c.Skip(nr * per_value)) return false;
  } else {
    if (!c.Skip(per_value + times)) return false;
  }
  *out = all.subspan(0, c.pos() - start);
  return true;
}

}  // namespace

Status ParseSample(Cursor& c, const PerfEventAttr& attr, const std::string& name, PerfSample* s) {
  const uint64_t t = attr.sample_type;
  if (t & ~uint64_t{perf::kSampleTypeKnownMask}) {
    return Error(
        ErrorCode::kUnsupported,
        "perf.data " + name + ": sample at offset " + std::to_string(c.offset()) +
            " uses sample_type bits this reader does not know (sample_type 0x" +
            [&] {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%llx", (unsigned long long)t);
              return std::string(buf);
            }() +
            "); its size cannot be computed");
  }
  s->sample_type = t;
  uint32_t pad = 0;
  if ((t & perf::kSampleIdentifier) && !c.U64(&s->id)) return PastEnd(c, name, "IDENTIFIER");
  if ((t & perf::kSampleIp) && !c.U64(&s->ip)) return PastEnd(c, name, "IP");
  if ((t & perf::kSampleTid) && !(c.U32(&s->pid) && c.U32(&s->tid))) {
    return PastEnd(c, name, "TID");
  }
  if ((t & perf::kSampleTime) && !c.U64(&s->time)) return PastEnd(c, name, "TIME");
  if ((t & perf::kSampleAddr) && !c.U64(&s->addr)) return PastEnd(c, name, "ADDR");
  if ((t & perf::kSampleId) && !c.U64(&s->id)) return PastEnd(c, name, "ID");
  if ((t & perf::kSampleStreamId) && !c.U64(&s->stream_id)) return PastEnd(c, name, "STREAM_ID");
  if ((t & perf::kSampleCpu) && !(c.U32(&s->cpu) && c.U32(&pad))) return PastEnd(c, name, "CPU");
  if ((t & perf::kSamplePeriod) && !c.U64(&s->period)) return PastEnd(c, name, "PERIOD");
  s->read_values = {};
  if ((t & perf::kSampleRead) && !SkipRead(c, attr.read_format, &s->read_values)) {
    return PastEnd(c, name, "READ");
  }
  s->callchain.clear();
  if (t & perf::kSampleCallchain) {
    uint64_t nr = 0;
    if (!c.U64(&nr) || !c.U64s(nr, &s->callchain)) return PastEnd(c, name, "CALLCHAIN");
  }
  s->raw = {};
  if (t & perf::kSampleRaw) {
    uint32_t size = 0;
    if (!c.U32(&size) || !c.Bytes(size, &s->raw)) return PastEnd(c, name, "RAW");
  }
  s->branches.clear();
  s->has_branch_hw_index = false;
  s->branch_hw_index = 0;
  if (t & perf::kSampleBranchStack) {
    uint64_t nr = 0;
    if (!c.U64(&nr)) return PastEnd(c, name, "BRANCH_STACK");
    if (attr.branch_hw_index()) {
      s->has_branch_hw_index = true;
      if (!c.U64(&s->branch_hw_index)) return PastEnd(c, name, "BRANCH_STACK hw_idx");
    }
    if (nr > c.remaining() / perf::kBranchEntrySize) return PastEnd(c, name, "BRANCH_STACK");
    s->branches.resize(nr);
    for (auto& e : s->branches) {
      c.U64(&e.from);
      c.U64(&e.to);
      c.U64(&e.flags);
    }
  }
  s->regs_user.clear();
  s->regs_user_abi = 0;
  if (t & perf::kSampleRegsUser) {
    if (!c.U64(&s->regs_user_abi)) return PastEnd(c, name, "REGS_USER");
    if (s->regs_user_abi != 0 && !c.U64s(std::popcount(attr.sample_regs_user), &s->regs_user)) {
      return PastEnd(c, name, "REGS_USER");
    }
  }
  s->stack_user = {};
  s->stack_user_dyn_size = 0;
  if (t & perf::kSampleStackUser) {
    uint64_t size = 0;
    if (!c.U64(&size) || !c.Bytes(size, &s->stack_user)) return PastEnd(c, name, "STACK_USER");
    if (size != 0 && !c.U64(&s->stack_user_dyn_size)) return PastEnd(c, name, "STACK_USER");
  }
  if ((t & (perf::kSampleWeight | perf::kSampleWeightStruct)) && !c.U64(&s->weight)) {
    return PastEnd(c, name, "WEIGHT");
  }
  if ((t & perf::kSampleDataSrc) && !c.U64(&s->data_src)) return PastEnd(c, name, "DATA_SRC");
  if ((t & perf::kSampleTransaction) && !c.U64(&s->transaction)) {
    return PastEnd(c, name, "TRANSACTION");
  }
  s->regs_intr.clear();
  s->regs_intr_abi = 0;
  if (t & perf::kSampleRegsIntr) {
    if (!c.U64(&s->regs_intr_abi)) return PastEnd(c, name, "REGS_INTR");
    if (s->regs_intr_abi != 0 && !c.U64s(std::popcount(attr.sample_regs_intr), &s->regs_intr)) {
      return PastEnd(c, name, "REGS_INTR");
    }
  }
  if ((t & perf::kSamplePhysAddr) && !c.U64(&s->phys_addr)) return PastEnd(c, name, "PHYS_ADDR");
  if ((t & perf::kSampleCgroup) && !c.U64(&s->cgroup)) return PastEnd(c, name, "CGROUP");
  if ((t & perf::kSampleDataPageSize) && !c.U64(&s->data_page_size)) {
    return PastEnd(c, name, "DATA_PAGE_SIZE");
  }
  if ((t & perf::kSampleCodePageSize) && !c.U64(&s->code_page_size)) {
    return PastEnd(c, name, "CODE_PAGE_SIZE");
  }
  s->aux = {};
  if (t & perf::kSampleAux) {
    uint64_t size = 0;
    if (!c.U64(&size) || !c.Bytes(size, &s->aux)) return PastEnd(c, name, "AUX");
  }
  return Status::Ok();
}

}  // namespace pathprof::decoders::perf_internal
