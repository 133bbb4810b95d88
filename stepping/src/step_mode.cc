#include "pathprof/stepping/step_mode.h"

namespace pathprof::stepping {

std::string_view StepModeName(StepMode mode) {
  switch (mode) {
    case StepMode::kBreakpoints:
      return "breakpoints";
    case StepMode::kInt3:
      return "int3";
    case StepMode::kEmulate:
      return "emulate";
    case StepMode::kSingleStep:
      break;
  }
  return "step";
}

bool ParseStepMode(std::string_view text, StepMode* out) {
  if (text == "step") {
    *out = StepMode::kSingleStep;
  } else if (text == "breakpoints" || text == "dr") {
    *out = StepMode::kBreakpoints;
  } else if (text == "int3") {
    *out = StepMode::kInt3;
  } else if (text == "emulate") {
    *out = StepMode::kEmulate;
  } else {
    return false;
  }
  return true;
}

}  // namespace pathprof::stepping
