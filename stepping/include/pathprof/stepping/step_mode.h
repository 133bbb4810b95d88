// How a ptrace burst gets a thread's next branch window. step_probe.h says which of them this
// host honours; src/window_stepper.h and src/emulated_windows.h how each works.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pathprof/core/enum_words.h"

namespace pathprof::stepping {

enum class StepMode : uint8_t {
  kSingleStep = 0,   // PTRACE_SINGLESTEP: one stop per instruction
  kBreakpoints = 1,  // debug-register breakpoints: one stop per taken conditional
  kInt3 = 2,         // int3 bytes in the text: the same, where debug registers never fire
  kEmulate = 3,      // one stop per window: the next branches run in an emulator (emulator/)
};

// The one vocabulary of step modes (flags, config files, printouts), in the order of
// preference that usage messages list them in. api/ maps them to pathprof.v1.StepMode.
inline constexpr EnumWords<StepMode, 4> kStepModeWords{{
    {StepMode::kEmulate, "emulate"},
    {StepMode::kBreakpoints, "breakpoints"},
    {StepMode::kInt3, "int3"},
    {StepMode::kSingleStep, "step"},
}};
// Accepted on input, never printed: "dr" (debug registers) for breakpoints.
inline constexpr EnumWords<StepMode, 1> kStepModeAliases{{{StepMode::kBreakpoints, "dr"}}};

std::string_view StepModeName(StepMode mode);  // its word in kStepModeWords
// A word of kStepModeWords or kStepModeAliases; false on anything else ("auto" included).
bool ParseStepMode(std::string_view text, StepMode* out);

// A mode asked for: one mode, or nullopt for "auto", which ChooseStepMode (step_probe.h) turns
// into what the step probe found works best on this host.
using StepRequest = std::optional<StepMode>;
inline constexpr std::string_view kAutoStepWord = "auto";
std::string_view StepRequestName(StepRequest request);  // "auto" or StepModeName
// "auto" or what ParseStepMode accepts; false (and `out` untouched) on anything else.
bool ParseStepRequest(std::string_view text, StepRequest* out);
// "auto, emulate, breakpoints, int3 or step", as usage messages list the choices.
std::string StepRequestWords();

}  // namespace pathprof::stepping
