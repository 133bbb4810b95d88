// What an Intel PT decoder must know about the recording: the CPU (for errata), the timing
// ratios (CPUID 0x15, nominal frequency, MTC frequency) and the address filters. Filled from a
// perf.data file's attr and AUXTRACE_INFO, or left at defaults for synthesized traces.
#pragma once

#include <array>
#include <cstdint>

#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_reader.h"

namespace pathprof::decoders {

struct PtAddrFilter {
  uint32_t config = 0;  // IA32_RTIT_CTL.ADDRn_CFG: 0 unused, 1 filter, 2 trace stop
  uint64_t begin = 0, end = 0;
};

struct PtDecoderConfig {
  // 0 means unknown: no errata workarounds are applied.
  uint16_t cpu_family = 0;
  uint8_t cpu_model = 0;
  uint8_t cpu_stepping = 0;
  uint32_t cpuid_0x15_eax = 0;  // TSC:CTC ratio denominator
  uint32_t cpuid_0x15_ebx = 0;  // TSC:CTC ratio numerator
  uint8_t nominal_freq = 0;     // max non-turbo ratio
  uint8_t mtc_freq = 0;         // IA32_RTIT_CTL.MTCFreq
  std::array<PtAddrFilter, 4> filters{};
};

// From the intel_pt attr (config bits), AUXTRACE_INFO (perf's intel_pt private words) and the
// cpuid feature string ("GenuineIntel,6,78,3"). Errors name what is missing.
Result<PtDecoderConfig> PtConfigFromPerf(const PerfDataInfo& info);

}  // namespace pathprof::decoders
