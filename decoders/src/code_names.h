// Names for the code of an ELF image that its symbol tables do not name, each one a fact the
// image itself proves, so that a stripped binary reads as one row per function:
// - PLT entries, `memcmp@plt`: the entry's indirect jump reads a GOT slot, and the slot's
//   relocation (.rela.plt, or .rela.dyn for .plt.got) names the symbol it will hold.
// - `_start` at the ELF entry point, and `main` where `_start` passes it to
//   __libc_start_main (its first argument, per that function's ABI).
// - Functions otherwise: the range of the unwind entry (FDE) covering the address, named by the
//   symbolizer `image+0xSTART` after the FDE's first address. An FDE describes one function as
//   the compiler emitted it (or one part of it: GCC's `.cold` split has its own), while a CFI
//   *row* (what libdw's dwarf_cfi_addrframe answers) changes at every push and pop, so names
//   taken from rows split one function into several and rename a caller per call site.
// Read once per image, bounded by the image's own size (ElfImage::Read bounds that).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pathprof::decoders {

struct NamedRange {
  uint64_t start = 0;  // image vaddrs, [start, end)
  uint64_t end = 0;
  std::string name;
};

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;
};

class CodeNames {
 public:
  // Reads the PLT, entry-point and unwind-entry names of the ELF file in `bytes`; what cannot be
  // read (no such section, an encoding it does not know) is simply not named.
  static CodeNames Read(std::span<const uint8_t> bytes);

  // The PLT entry, `_start` or `main` holding `vaddr`, or nullptr.
  const NamedRange* NameAt(uint64_t vaddr) const;
  // The unwind entry (FDE) holding `vaddr`, or nullptr. FDEs from .eh_frame, then .debug_frame.
  const AddressRange* FunctionAt(uint64_t vaddr) const;

  const std::vector<NamedRange>& names() const { return names_; }
  const std::vector<AddressRange>& functions() const { return functions_; }

 private:
  std::vector<NamedRange> names_;        // sorted by start, disjoint
  std::vector<AddressRange> functions_;  // sorted by start, disjoint
};

}  // namespace pathprof::decoders
