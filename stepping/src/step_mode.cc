#include "pathprof/stepping/step_mode.h"

namespace pathprof::stepping {

std::string_view StepModeName(StepMode mode) {
  return WordOf(kStepModeWords, mode);
}

bool ParseStepMode(std::string_view text, StepMode* out) {
  return ParseWord(kStepModeWords, text, out) || ParseWord(kStepModeAliases, text, out);
}

std::string_view StepRequestName(StepRequest request) {
  return request ? StepModeName(*request) : kAutoStepWord;
}

bool ParseStepRequest(std::string_view text, StepRequest* out) {
  if (text == kAutoStepWord) {
    out->reset();
    return true;
  }
  StepMode mode;
  if (!ParseStepMode(text, &mode)) return false;
  *out = mode;
  return true;
}

std::string StepRequestWords() {
  return std::string(kAutoStepWord) + ", " + WordList(kStepModeWords);
}

}  // namespace pathprof::stepping
