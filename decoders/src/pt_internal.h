// Helpers shared by the PT sources; not part of the public decoders API.
#pragma once

#include <intel-pt.h>

#include <span>

#include "pathprof/decoders/pt_config.h"

namespace pathprof::decoders {

// A libipt config over `trace` with our settings (and the CPU's errata when the CPU is known).
inline pt_config MakeLibiptConfig(const PtDecoderConfig& c, std::span<const uint8_t> trace) {
  pt_config config;
  pt_config_init(&config);
  // libipt never writes through begin/end when decoding.
  config.begin = const_cast<uint8_t*>(trace.data());
  config.end = const_cast<uint8_t*>(trace.data() + trace.size());
  if (c.cpu_family) {
    config.cpu.vendor = pcv_intel;
    config.cpu.family = c.cpu_family;
    config.cpu.model = c.cpu_model;
    config.cpu.stepping = c.cpu_stepping;
    pt_cpu_errata(&config.errata, &config.cpu);
  }
  config.cpuid_0x15_eax = c.cpuid_0x15_eax;
  config.cpuid_0x15_ebx = c.cpuid_0x15_ebx;
  config.nom_freq = c.nominal_freq;
  config.mtc_freq = c.mtc_freq;
  uint64_t cfg = 0;
  for (int i = 0; i < 4; ++i) cfg |= static_cast<uint64_t>(c.filters[i].config & 0xf) << (4 * i);
  config.addr_filter.config.addr_cfg = cfg;
  config.addr_filter.addr0_a = c.filters[0].begin;
  config.addr_filter.addr0_b = c.filters[0].end;
  config.addr_filter.addr1_a = c.filters[1].begin;
  config.addr_filter.addr1_b = c.filters[1].end;
  config.addr_filter.addr2_a = c.filters[2].begin;
  config.addr_filter.addr2_b = c.filters[2].end;
  config.addr_filter.addr3_a = c.filters[3].begin;
  config.addr_filter.addr3_b = c.filters[3].end;
  return config;
}

}  // namespace pathprof::decoders
