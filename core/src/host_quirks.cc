#include "pathprof/core/host_quirks.h"

#include <cstdlib>
#include <sstream>

namespace pathprof {

std::string HostQuirks::ToString() const {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(no_dr_breakpoints, "no-dr-breakpoints");
  add(lost_trap_after_cpuid, "lost-trap-after-cpuid");
  add(slow_clock, "slow-clock");
  return out;
}

HostQuirks ParseHostQuirks(const std::string& text, std::string* unknown) {
  HostQuirks q;
  std::istringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (name == "all") {
      q.no_dr_breakpoints = q.lost_trap_after_cpuid = q.slow_clock = true;
    } else if (name == "no-dr-breakpoints") {
      q.no_dr_breakpoints = true;
    } else if (name == "lost-trap-after-cpuid") {
      q.lost_trap_after_cpuid = true;
    } else if (name == "slow-clock") {
      q.slow_clock = true;
    } else if (unknown != nullptr) {
      if (!unknown->empty()) *unknown += ',';
      *unknown += name;
    }
  }
  return q;
}

const HostQuirks& SimulatedQuirks() {
  static const HostQuirks quirks = [] {
    const char* env = std::getenv(kSimulateQuirksEnv);
    return env != nullptr ? ParseHostQuirks(env) : HostQuirks{};
  }();
  return quirks;
}

}  // namespace pathprof
