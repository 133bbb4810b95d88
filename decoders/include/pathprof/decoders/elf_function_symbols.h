// An ELF image's function symbols under the names BOLT gives them, so that a profile written
// for BOLT (bolt_fdata_writer.h) names the functions llvm-bolt finds in the binary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

struct FunctionSymbol {
  uint64_t vaddr = 0;
  uint64_t size = 0;
  // Mangled, as in the symbol table. BOLT keeps a global name as is and gives a local one a
  // counter, `name/N`, N counting the local symbols of that name in address order (1 for a
  // name used once, which is nearly every static function).
  std::string bolt_name;
};

// Function symbols (STT_FUNC, STT_GNU_IFUNC) of .symtab, or of .dynsym where the file is
// stripped, sorted by address; one without a size runs to the next one or its section's end.
// kCorrupt if the symbol tables cannot be read; an empty list if the image has none.
Result<std::vector<FunctionSymbol>> ReadFunctionSymbols(const ElfImage& image);

// The symbol whose [vaddr, vaddr + size) holds `vaddr`, or nullptr.
const FunctionSymbol* FindFunction(const std::vector<FunctionSymbol>& sorted, uint64_t vaddr);

// The function named `name` in the ELF file at `path`, the first in address order (a local
// symbol, BOLT's `name/N`, answers to `name` too): for tools and tests that find a function's
// code by its name. kNotFound naming both when the file has none; the errors of ElfImage::Open
// and ReadFunctionSymbols.
Result<FunctionSymbol> ReadFunctionNamed(const std::string& path, std::string_view name);

}  // namespace pathprof::decoders
