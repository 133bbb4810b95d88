// Records other than SAMPLE: the kernel's side-band records and the perf tool's synthesized ones.
#include "perf_data_internal.h"

namespace pathprof::decoders::perf_internal {
namespace {

bool IsKernelType(uint32_t type) {
  return type >= 1 && type < perf::kKernelRecordTypeEnd;
}

Status Short(const std::string& name, uint64_t offset, uint32_t type) {
  return Corrupt(name, offset,
                 "record of type " + std::to_string(type) + " is too short for its fields");
}

// Bytes that may follow a record in the stream: bounded by what is there.
Status TakeTrailing(uint64_t n, std::span<const uint8_t> after, const std::string& name,
                    uint64_t offset, const char* what, std::span<const uint8_t>* data,
                    uint64_t* extra) {
  if (n > after.size()) {
    return Truncated(name, offset,
                     std::string(what) + " says " + std::to_string(n) + " bytes follow, only " +
                         std::to_string(after.size()) + " remain");
  }
  *data = after.subspan(0, n);
  *extra = n;
  return Status::Ok();
}

}  // namespace

Status ParseBuildId(uint16_t misc, Cursor& c, const std::string& name, PerfBuildId* out) {
  const uint64_t start = c.offset();
  std::span<const uint8_t> id;
  if (!c.U32(reinterpret_cast<uint32_t*>(&out->pid)) || !c.Bytes(24, &id)) {
    return Corrupt(name, start, "build-id entry is too short");
  }
  size_t len = 20;
  if (misc & perf::kMiscBuildIdSize) len = std::min<size_t>(id[20], 20);
  out->misc = misc;
  out->build_id.assign(reinterpret_cast<const char*>(id.data()), len);
  c.String(c.remaining(), &out->filename);
  return Status::Ok();
}

Status ParseNonSample(uint32_t type, uint16_t misc, Cursor& body, const PerfEventAttr* attr,
                      std::span<const uint8_t> after, const std::string& name, PerfRecordBody* out,
                      uint64_t* extra) {
  *extra = 0;
  const uint64_t offset = body.offset() - perf::kRecordHeaderSize;
  PerfSampleId sid;
  // Kernel records end with the sample_id_all trailer; split it off first.
  std::span<const uint8_t> main = body.Rest();
  if (IsKernelType(type) && attr != nullptr && attr->sample_id_all()) {
    const uint64_t n = SampleIdSize(attr->sample_type);
    if (n > main.size()) {
      return Corrupt(
          name, offset,
          "record of type " + std::to_string(type) + " is shorter than its sample_id_all trailer");
    }
    ParseSampleId(main.subspan(main.size() - n), attr->sample_type, &sid);
    main = main.subspan(0, main.size() - n);
  }
  Cursor c(main, body.offset());

  switch (type) {
    case perf::kRecordMmap:
    case perf::kRecordMmap2: {
      PerfMmap m;
      m.is_mmap2 = type == perf::kRecordMmap2;
      if (!(c.U32(&m.pid) && c.U32(&m.tid) && c.U64(&m.start) && c.U64(&m.len) &&
            c.U64(&m.pgoff))) {
        return Short(name, offset, type);
      }
      if (m.is_mmap2) {
        if (misc & perf::kMiscMmapBuildId) {
          uint8_t size = 0;
          std::span<const uint8_t> id;
          if (!(c.U8(&size) && c.Skip(3) && c.Bytes(20, &id))) return Short(name, offset, type);
          m.build_id.assign(reinterpret_cast<const char*>(id.data()), std::min<size_t>(size, 20));
        } else if (!(c.U32(&m.maj) && c.U32(&m.min) && c.U64(&m.ino) && c.U64(&m.ino_generation))) {
          return Short(name, offset, type);
        }
        if (!(c.U32(&m.prot) && c.U32(&m.flags))) return Short(name, offset, type);
      }
      c.String(c.remaining(), &m.filename);
      m.sample_id = sid;
      *out = std::move(m);
      return Status::Ok();
    }
    case perf::kRecordComm: {
      PerfComm m;
      if (!(c.U32(&m.pid) && c.U32(&m.tid))) return Short(name, offset, type);
      m.exec = misc & perf::kMiscCommExec;
      c.String(c.remaining(), &m.comm);
      m.sample_id = sid;
      *out = std::move(m);
      return Status::Ok();
    }
    case perf::kRecordFork:
    case perf::kRecordExit: {
      PerfForkExit m;
      m.is_exit = type == perf::kRecordExit;
      if (!(c.U32(&m.pid) && c.U32(&m.ppid) && c.U32(&m.tid) && c.U32(&m.ptid) && c.U64(&m.time))) {
        return Short(name, offset, type);
      }
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordSwitch:
    case perf::kRecordSwitchCpuWide: {
      PerfSwitch m;
      m.cpu_wide = type == perf::kRecordSwitchCpuWide;
      m.out = misc & perf::kMiscSwitchOut;
      m.preempt = misc & perf::kMiscSwitchOutPreempt;
      if (m.cpu_wide && !(c.U32(&m.next_prev_pid) && c.U32(&m.next_prev_tid))) {
        return Short(name, offset, type);
      }
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordLost: {
      PerfLost m;
      if (!(c.U64(&m.id) && c.U64(&m.lost))) return Short(name, offset, type);
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordLostSamples: {
      PerfLostSamples m;
      if (!c.U64(&m.lost)) return Short(name, offset, type);
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordAux: {
      PerfAux m;
      if (!(c.U64(&m.aux_offset) && c.U64(&m.aux_size) && c.U64(&m.flags))) {
        return Short(name, offset, type);
      }
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordItraceStart: {
      PerfItraceStart m;
      if (!(c.U32(&m.pid) && c.U32(&m.tid))) return Short(name, offset, type);
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordThrottle:
    case perf::kRecordUnthrottle: {
      PerfThrottle m;
      m.unthrottle = type == perf::kRecordUnthrottle;
      if (!(c.U64(&m.time) && c.U64(&m.id) && c.U64(&m.stream_id))) {
        return Short(name, offset, type);
      }
      m.sample_id = sid;
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordFinishedRound:
      *out = PerfFinishedRound{};
      return Status::Ok();
    case perf::kRecordIdIndex: {
      PerfIdIndex m;
      uint64_t nr = 0;
      if (!c.U64(&nr) || nr > c.remaining() / 32) return Short(name, offset, type);
      m.entries.resize(nr);
      for (auto& e : m.entries) {
        c.U64(&e.id);
        c.U64(&e.idx);
        c.U64(&e.cpu);
        c.U64(&e.tid);
      }
      *out = std::move(m);
      return Status::Ok();
    }
    case perf::kRecordAuxtraceInfo: {
      PerfAuxtraceInfo m;
      uint32_t reserved = 0;
      if (!(c.U32(&m.type) && c.U32(&reserved))) return Short(name, offset, type);
      c.U64s(c.remaining() / 8, &m.priv);
      *out = std::move(m);
      return Status::Ok();
    }
    case perf::kRecordAuxtrace: {
      PerfAuxtrace m;
      uint32_t reserved = 0;
      if (!(c.U64(&m.size) && c.U64(&m.offset) && c.U64(&m.reference) && c.U32(&m.idx) &&
            c.U32(&m.tid) && c.U32(&m.cpu) && c.U32(&reserved))) {
        return Short(name, offset, type);
      }
      PATHPROF_RETURN_IF_ERROR(
          TakeTrailing(m.size, after, name, offset, "AUXTRACE record", &m.data, extra));
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordHeaderTracingData: {
      uint32_t size = 0;
      if (!c.U32(&size)) return Short(name, offset, type);
      const uint64_t padded = (uint64_t{size} + 7) & ~uint64_t{7};
      PerfOtherRecord m;
      m.known_type = true;
      PATHPROF_RETURN_IF_ERROR(
          TakeTrailing(padded, after, name, offset, "tracing data record", &m.payload, extra));
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordTimeConv: {
      PerfTimeConv m;
      if (!(c.U64(&m.time_shift) && c.U64(&m.time_mult) && c.U64(&m.time_zero))) {
        return Short(name, offset, type);
      }
      uint8_t zero = 0, short_ = 0;
      if (c.remaining() >= 24 && c.U64(&m.time_cycles) && c.U64(&m.time_mask) && c.U8(&zero) &&
          c.U8(&short_)) {
        m.has_cycles = true;
        m.cap_user_time_zero = zero;
        m.cap_user_time_short = short_;
      }
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordHeaderAttr: {
      PerfHeaderAttr m;
      uint32_t size = 0;
      Cursor peek(main, c.offset());
      if (!(peek.Skip(4) && peek.U32(&size))) return Short(name, offset, type);
      if (size == 0) size = perf::kAttrSizeVer0;
      std::span<const uint8_t> attr_bytes;
      if (size < 8 || !c.Bytes(size, &attr_bytes)) {
        return Corrupt(
            name, offset,
            "HEADER_ATTR record's attr size " + std::to_string(size) + " does not fit its record");
      }
      m.attr.attr = ParseAttr(attr_bytes);
      c.U64s(c.remaining() / 8, &m.attr.ids);
      *out = std::move(m);
      return Status::Ok();
    }
    case perf::kRecordHeaderFeature: {
      PerfHeaderFeature m;
      if (!c.U64(&m.feature)) return Short(name, offset, type);
      m.data = c.Rest();
      *out = m;
      return Status::Ok();
    }
    case perf::kRecordHeaderBuildId: {
      PerfBuildId m;
      PATHPROF_RETURN_IF_ERROR(ParseBuildId(misc, c, name, &m));
      *out = std::move(m);
      return Status::Ok();
    }
    default: {
      PerfOtherRecord m;
      m.known_type = IsKernelType(type) ||
                     (type >= perf::kRecordHeaderAttr && type < perf::kUserRecordTypeEnd);
      m.payload = body.Rest();
      *out = m;
      return Status::Ok();
    }
  }
}

}  // namespace pathprof::decoders::perf_internal
