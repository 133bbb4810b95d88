// The Zydis decoder for x86-64 code that x86_branch and the cycle model share. A ZydisDecoder
// is not modified by decoding, so one instance serves every thread.
#pragma once

#include <Zydis/Zydis.h>

namespace pathprof::decoders {

const ZydisDecoder& ZydisDecoder64();

}  // namespace pathprof::decoders
