// Header feature sections (file mode: after the data section; pipe mode: HEADER_FEATURE records).
#include "perf_data_internal.h"

namespace pathprof::decoders::perf_internal {
namespace {

// perf_header_string: u32 length (with padding), then NUL-padded bytes.
bool HeaderString(Cursor& c, std::string* out) {
  uint32_t len = 0;
  return c.U32(&len) && c.String(len, out);
}

Status BadFeature(const std::string& name, uint64_t offset, int feature) {
  return Corrupt(name, offset,
                 "header feature " + std::to_string(feature) + " does not fit its section");
}

}  // namespace

Status ApplyFeature(int feature, Cursor& c, const std::string& name, PerfDataInfo* info) {
  const uint64_t start = c.offset();
  std::string* text = nullptr;
  switch (feature) {
    case perf::kFeatHostname:
      text = &info->hostname;
      break;
    case perf::kFeatOsRelease:
      text = &info->os_release;
      break;
    case perf::kFeatVersion:
      text = &info->perf_version;
      break;
    case perf::kFeatArch:
      text = &info->arch;
      break;
    case perf::kFeatCpuDesc:
      text = &info->cpu_desc;
      break;
    case perf::kFeatCpuId:
      text = &info->cpuid;
      break;
    default:
      break;
  }
  if (text != nullptr) {
    if (!HeaderString(c, text)) return BadFeature(name, start, feature);
  } else if (feature == perf::kFeatNrCpus) {
    if (!(c.U32(&info->nr_cpus_available) && c.U32(&info->nr_cpus_online))) {
      return BadFeature(name, start, feature);
    }
  } else if (feature == perf::kFeatCmdline) {
    uint32_t nr = 0;
    if (!c.U32(&nr) || nr > c.remaining() / 4) return BadFeature(name, start, feature);
    info->cmdline.clear();
    for (uint32_t i = 0; i < nr; ++i) {
      std::string s;
      if (!HeaderString(c, &s)) return BadFeature(name, start, feature);
      info->cmdline.push_back(std::move(s));
    }
  } else if (feature == perf::kFeatBuildId) {
    while (!c.empty()) {
      const uint64_t at = c.offset();
      uint32_t type = 0;
      uint16_t misc = 0, size = 0;
      std::span<const uint8_t> body;
      if (!(c.U32(&type) && c.U16(&misc) && c.U16(&size)) || size < perf::kRecordHeaderSize ||
          !c.Bytes(size - perf::kRecordHeaderSize, &body)) {
        return Corrupt(name, at, "build-id table entry does not fit its section");
      }
      Cursor entry(body, at + perf::kRecordHeaderSize);
      PerfBuildId id;
      PATHPROF_RETURN_IF_ERROR(ParseBuildId(misc, entry, name, &id));
      info->build_ids.push_back(std::move(id));
    }
  }
  if (feature >= 0 && feature < perf::kFeatureBits) info->features.set(feature);
  return Status::Ok();
}

}  // namespace pathprof::decoders::perf_internal
