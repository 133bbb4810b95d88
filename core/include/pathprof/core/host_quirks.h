// Host quirks that tests can simulate on any machine. pathprof runs on hosts whose hypervisor
// never fires debug-register breakpoints, drops the single-step trap after CPUID, or turns clock
// reads into system calls. The collectors probe for each and fall back; so that the fallbacks run
// on every host, not only on the quirky ones, a test-only switch makes the low-level primitives
// misbehave in exactly those ways:
//
//   PATHPROF_SIMULATE_QUIRKS=no-dr-breakpoints,lost-trap-after-cpuid,slow-clock   (or "all")
//
// Read once per process; the tracer helper inherits it through its environment. Never set in
// production: `pathctl caps` prints it whenever it is in effect.
#pragma once

#include <string>

namespace pathprof {

struct HostQuirks {
  bool no_dr_breakpoints = false;      // DR execute breakpoints arm, read back, never fire
  bool lost_trap_after_cpuid = false;  // a single step from CPUID stops one instruction late
  bool slow_clock = false;             // every clock read is a system call (no vDSO)

  bool any() const { return no_dr_breakpoints || lost_trap_after_cpuid || slow_clock; }
  // The switch's value, normalised ("no-dr-breakpoints,slow-clock"); empty when none.
  std::string ToString() const;
};

// Parses the switch's syntax; unknown names are reported in *unknown (comma-separated).
HostQuirks ParseHostQuirks(const std::string& text, std::string* unknown = nullptr);

// The quirks simulated in this process (from the environment, read on first use).
const HostQuirks& SimulatedQuirks();

constexpr const char* kSimulateQuirksEnv = "PATHPROF_SIMULATE_QUIRKS";

}  // namespace pathprof
