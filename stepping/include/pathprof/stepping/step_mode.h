// How a ptrace burst gets a thread's next branch window (window_stepper.h in src/ says how each
// works; step_probe.h which of them this host honours).
#pragma once

#include <cstdint>
#include <string_view>

namespace pathprof::stepping {

enum class StepMode : uint8_t { kSingleStep = 0, kBreakpoints = 1, kInt3 = 2 };
std::string_view StepModeName(StepMode mode);  // "step", "breakpoints", "int3"
// "step", "breakpoints" (or "dr"), "int3"; false on anything else.
bool ParseStepMode(std::string_view text, StepMode* out);

}  // namespace pathprof::stepping
