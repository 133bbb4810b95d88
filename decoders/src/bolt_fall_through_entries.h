// Where, inside one function, BOLT's CFG has a block entered by falling through from
// straight-line code (a jump target right after an instruction that is not a jump): perf2bolt
// writes an edge for every such entry a trace runs over, and a branch trace alone shows none.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "pathprof/decoders/elf_function_symbols.h"
#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

// (offset of the block start, offset of the instruction before it), by block start. Decodes the
// function from its first byte; stops early at bytes that do not decode (data in code).
std::vector<std::pair<uint64_t, uint64_t>> FallThroughEntries(const ElfImage& image,
                                                              const FunctionSymbol& function);

}  // namespace pathprof::decoders
