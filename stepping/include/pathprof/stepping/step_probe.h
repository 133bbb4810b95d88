// The step-mechanism probe: before the burst tracer relies on a way of stopping a thread, it
// tries it on a throwaway child of its own, because hosts differ in ways no version number
// tells. Seen so far: hypervisors that accept debug-register breakpoints and never fire them,
// that drop the single-step trap after CPUID, that ignore BTF block stepping (it stops after
// every instruction), and stops that cost 3 us on one host and 30 us on the next.
//
// The child runs code of this binary's own (step_probe.cc): a loop for breakpoints and costs,
// and a sequence of the instructions hypervisors emulate (CPUID, RDTSC, RDRAND, SGDT, ...),
// each followed by a NOP, single-stepped to see which lose their trap. Every wait has a
// deadline. Results are cached per boot, kernel and simulated quirks (see CachedStepProbe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/core/host_quirks.h"
#include "pathprof/stepping/step_mode.h"

namespace pathprof::stepping {

struct MechanismResult {
  bool works = false;
  std::string detail;  // what was seen, in words a user can act on
};

struct StepProbeResult {
  bool ran = false;   // false: the probe itself could not run (see error)
  std::string error;  // e.g. ptrace refused
  MechanismResult single_step;
  MechanismResult dr_breakpoints;
  MechanismResult int3_breakpoints;
  MechanismResult block_step;  // PTRACE_SINGLEBLOCK (BTF); reported, never used
  // Emulated windows (StepMode::kEmulate): works when the probe loop's windows, emulated, are
  // identical to single steps of the child through the same code.
  MechanismResult emulate;
  // Instructions after which a single step stopped late ("cpuid"); the tracers decode across.
  std::vector<std::string> lost_trap_after;
  // Instructions the CPU refused (#UD, #GP): not probed.
  std::vector<std::string> not_probed;
  // Median cost of one stop as the target sees it, tracer on the target's CPU (0: not measured).
  uint64_t single_step_ns = 0;
  uint64_t int3_leg_ns = 0;
  uint64_t dr_leg_ns = 0;
  uint64_t emulate_window_ns = 0;  // the emulator's time for one warm window of the probe loop
  std::string simulated_quirks;    // PATHPROF_SIMULATE_QUIRKS in effect during the probe
  bool from_cache = false;

  // What `auto` uses: ChooseStepMode(std::nullopt, *this).mode.
  StepMode BestMode() const;
  bool AnyWorks() const {
    return single_step.works || dr_breakpoints.works || int3_breakpoints.works || emulate.works;
  }
  bool Works(StepMode mode) const;
  const MechanismResult& Of(StepMode mode) const;

  // A line per key ("key=value"), for the cache file; Parse is its inverse (false if corrupt).
  std::string Serialize() const;
  static bool Parse(const std::string& text, StepProbeResult* out);
};

// How bursts step a window, decided in one place for everyone who uses or reports it: the burst
// tracer that steps, `pathctl caps` and the daemon's capabilities that say what auto means, and
// the sessions of `pathctl run`, `start` and the daemon that say what they used. (Before, each
// asked the probe in its own way, and caps could name one mechanism while bursts used another.)
struct StepModeChoice {
  bool ok = false;  // false: no way to step a thread as requested works here (reason says why)
  StepMode mode = StepMode::kSingleStep;
  std::string reason;  // why this mode, or why none, in words a user can act on
};

// `requested`: the mode a user named, or std::nullopt for auto, which takes, among the
// mechanisms that work, emulation > DR breakpoints > int3 > single step, except that int3 goes
// before DR where its measured stop costs under 3/4 of a DR stop.
StepModeChoice ChooseStepMode(std::optional<StepMode> requested, const StepProbeResult& probe);

// The cache's key for this boot and kernel under `quirks` (tests write caches of their own).
std::string StepProbeCacheKey(const HostQuirks& quirks);

// Runs the probe now (~50 ms when every mechanism works, up to ~0.5 s when some time out).
StepProbeResult RunStepProbe();

// The probe result for this boot, kernel and quirk setting: from the cache when it has it,
// else run and stored. The cache is /run/pathprof/step-probe for root, $XDG_RUNTIME_DIR for
// others, or $PATHPROF_STEP_PROBE_CACHE ("off" disables it); nothing is cached where no such
// private directory exists.
StepProbeResult CachedStepProbe();

}  // namespace pathprof::stepping
