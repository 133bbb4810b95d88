#include "pathprof/decoders/pt_config.h"

#include <bit>
#include <sstream>
#include <string>

namespace pathprof::decoders {
namespace {

// Word indices of perf's intel_pt AUXTRACE_INFO private area (tools/perf/util/intel-pt.h).
enum PerfIntelPtPriv {
  kPmuType = 0,
  kMtcFreqBits = 11,
  kTscCtcN = 12,
  kTscCtcD = 13,
  kMaxNonTurboRatio = 15,
};
constexpr uint32_t kAuxtraceIntelPt = 1;

}  // namespace

Result<PtDecoderConfig> PtConfigFromPerf(const PerfDataInfo& info) {
  if (!info.auxtrace_info)
    return Error(ErrorCode::kNotFound,
                 "perf.data has no AUXTRACE_INFO record: not an Intel PT recording");
  const PerfAuxtraceInfo& a = *info.auxtrace_info;
  if (a.type != kAuxtraceIntelPt)
    return Error(ErrorCode::kUnsupported,
                 "AUXTRACE_INFO type " + std::to_string(a.type) + " is not Intel PT (1)");
  if (a.priv.size() <= kMaxNonTurboRatio)
    return Error(ErrorCode::kCorrupt, "Intel PT AUXTRACE_INFO has " +
                                          std::to_string(a.priv.size()) +
                                          " private words, expected at least 16");
  PtDecoderConfig c;
  const PerfEventAttr* attr = nullptr;
  for (const auto& at : info.attrs)
    if (at.attr.type == a.priv[kPmuType]) attr = &at.attr;
  if (!attr)
    return Error(ErrorCode::kNotFound,
                 "no perf attr of the intel_pt PMU type " + std::to_string(a.priv[kPmuType]));
  const uint64_t mtc_mask = a.priv[kMtcFreqBits];
  if (mtc_mask)
    c.mtc_freq = static_cast<uint8_t>((attr->config & mtc_mask) >> std::countr_zero(mtc_mask));
  c.cpuid_0x15_ebx = static_cast<uint32_t>(a.priv[kTscCtcN]);
  c.cpuid_0x15_eax = static_cast<uint32_t>(a.priv[kTscCtcD]);
  c.nominal_freq = static_cast<uint8_t>(a.priv[kMaxNonTurboRatio]);
  // "GenuineIntel,6,78,3": vendor, family, model, stepping.
  std::istringstream in(info.cpuid);
  std::string vendor, family, model, stepping;
  if (std::getline(in, vendor, ',') && std::getline(in, family, ',') &&
      std::getline(in, model, ',') && std::getline(in, stepping, ',') && vendor == "GenuineIntel") {
    c.cpu_family = static_cast<uint16_t>(std::stoul(family));
    c.cpu_model = static_cast<uint8_t>(std::stoul(model));
    c.cpu_stepping = static_cast<uint8_t>(std::stoul(stepping));
  }
  return c;
}

}  // namespace pathprof::decoders
