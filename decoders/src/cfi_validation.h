// Checks the call frame information libdw would read from an image before libdw reads it.
// An image's .eh_frame comes from the profiled program, so from any user: libdw (0.188) trusts
// it, and sizes each row's register table by the highest register number a CFI program names
// (a rule for register 0x0ffffffa costs 2 GiB) and copies that table on every
// DW_CFA_remember_state. The unwinder therefore hands libdw only CFI that passes this check:
// every entry libdw can reach (its linear walk, a CIE pointer, an .eh_frame_hdr table entry)
// parses within its bounds, names registers of the x86-64 psABI only and nests remembered states
// to a bounded depth. Anything else is refused with its reason and the image is unwound by frame
// pointers instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "pathprof/core/status.h"

struct Elf;  // libelf's handle

namespace pathprof::decoders {

// DWARF register numbers a CFI program may name: the x86-64 psABI's table (figure "DWARF
// Register Number Mapping") runs to 145: rax..r15 and the return address 0-16, xmm0-15 17-32,
// st0-7 33-40, mm0-7 41-48, rflags and the segment registers 49-55, fs/gs base 58-59, tr, ldtr,
// mxcsr, fcw, fsw 62-66, xmm16-31 67-82, k0-7 118-125 and APX's r16-r31 130-145. A bound of 146
// keeps every register a compiler can describe and holds libdw's table to 146 rules (1.2 KiB).
inline constexpr uint64_t kCfiRegisterLimit = 146;
// DW_CFA_remember_state nesting: each level is one copy of the row in libdw. Compilers nest one
// or two levels (a function's epilogues); 64 is far above that and bounds the copies to under 80
// KiB.
inline constexpr int kCfiMaxRememberDepth = 64;
// A walk that goes on past kCfiMaxSectionBytes, or one entry above kCfiMaxEntryBytes, is refused
// rather than read: the biggest real .eh_frame (browsers, LLVM) is tens of MiB, an entry a few
// KiB.
inline constexpr size_t kCfiMaxSectionBytes = size_t{256} << 20;
inline constexpr size_t kCfiMaxEntryBytes = size_t{1} << 20;
// A DWARF expression in a rule (PLT entries, stack realignment, signal frames: tens of bytes).
inline constexpr size_t kCfiMaxExpressionBytes = 1024;

// Why CFI was refused; the counted name is CfiRefusalName's.
enum class CfiRefusal : uint8_t {
  kNone,
  kMalformed,            // a length, pointer or field that does not parse within its entry
  kUnsupported,          // well-formed but not what x86-64 toolchains emit (64-bit lengths,
                         // CIE versions, augmentations, pointer encodings, other machines)
  kRegisterOutOfRange,   // a register number at or above kCfiRegisterLimit
  kStateTooDeep,         // DW_CFA_remember_state nested deeper than kCfiMaxRememberDepth
  kUnknownOpcode,        // a call frame instruction outside DWARF 5 and the GNU extensions
  kSearchTableMismatch,  // an .eh_frame_hdr entry that is not the start of a walked FDE
  kTooLarge,             // a section, entry or expression above its bound
};
std::string_view CfiRefusalName(CfiRefusal reason);

// The bytes libdw reads: .eh_frame from its first entry, and the .eh_frame_hdr when it has one.
struct EhFrameSource {
  std::span<const uint8_t> eh_frame;
  uint64_t eh_frame_vaddr = 0;
  bool has_hdr = false;
  std::span<const uint8_t> hdr;
  uint64_t hdr_vaddr = 0;
};

struct CfiCheck {
  CfiRefusal refusal = CfiRefusal::kNone;
  Status status;       // the refusal: what, at which offset of which section, why
  bool found = false;  // libdw would find CFI in the image (false: nothing for it to read)
  size_t cies = 0;
  size_t fdes = 0;
  size_t table_entries = 0;  // .eh_frame_hdr search table entries, each checked
  bool ok() const { return refusal == CfiRefusal::kNone; }
};

// Walks `source` as libdw would read it: every CIE and FDE up to the terminator, every call
// frame instruction, every search table entry.
CfiCheck CheckEhFrame(const EhFrameSource& source);

// Finds the CFI dwarf_getcfi_elf would take from `elf`, by the same rules (the sections named
// .eh_frame and .eh_frame_hdr, else the PT_GNU_EH_FRAME segment and the file from the .eh_frame
// it names), and checks it. `found` false: libdw would find none, so it need not be called.
CfiCheck CheckImageCfi(Elf* elf);
// The same for a whole ELF file in memory (opened with elf_memory for the check only).
CfiCheck CheckElfFileCfi(std::span<const uint8_t> file);

}  // namespace pathprof::decoders
