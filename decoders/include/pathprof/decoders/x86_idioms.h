// x86 idioms more than one stage recognises: the cycle model (a dependency the core breaks at
// rename) and the emulator's unknown-byte tracking (a result that depends on no input).
#pragma once

#include <cstdint>

namespace pathprof::decoders {

// Whether the instruction `mnemonic` (a ZydisMnemonic), given one register as both sources,
// has a result that does not depend on it: xor eax, eax and psubb x, x are 0, pcmpeqd x, x is
// all ones, pcmpgtd x, x is 0. The caller checks that the sources are one register.
bool IsDependencyBreakingIdiom(uint16_t mnemonic);

}  // namespace pathprof::decoders
