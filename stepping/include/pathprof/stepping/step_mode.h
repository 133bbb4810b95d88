// How a ptrace burst gets a thread's next branch window. step_probe.h says which of them this
// host honours; src/window_stepper.h and src/emulated_windows.h how each works.
#pragma once

#include <cstdint>
#include <string_view>

namespace pathprof::stepping {

enum class StepMode : uint8_t {
  kSingleStep = 0,   // PTRACE_SINGLESTEP: one stop per instruction
  kBreakpoints = 1,  // debug-register breakpoints: one stop per taken conditional
  kInt3 = 2,         // int3 bytes in the text: the same, where debug registers never fire
  kEmulate = 3,      // one stop per window: the next branches run in an emulator (emulator/)
};
std::string_view StepModeName(StepMode mode);  // "step", "breakpoints", "int3", "emulate"
// "step", "breakpoints" (or "dr"), "int3", "emulate"; false on anything else.
bool ParseStepMode(std::string_view text, StepMode* out);

}  // namespace pathprof::stepping
