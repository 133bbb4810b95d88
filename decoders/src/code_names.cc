#include "code_names.h"

#include <Zydis/Zydis.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "eh_encoding.h"
#include "zydis_decoder.h"

namespace pathprof::decoders {
namespace {

// Bounds: an image is at most ElfImage's byte limit, so these only keep a crafted file from
// turning a few bytes into much memory (an FDE is at least 16 bytes; a PLT entry 8).
constexpr size_t kMaxFunctions = 1u << 22;
constexpr size_t kMaxPltEntries = 1u << 20;
// glibc's _start reaches its call to __libc_start_main within 40 bytes on x86-64.
constexpr size_t kStartScanBytes = 64;

struct Section {
  GElf_Shdr header{};
  Elf_Data* data = nullptr;
  std::span<const uint8_t> Bytes() const {
    if (data == nullptr || data->d_buf == nullptr) return {};
    return {static_cast<const uint8_t*>(data->d_buf), data->d_size};
  }
};

std::optional<Section> FindSection(Elf* elf, const char* wanted) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    Section s;
    if (gelf_getshdr(scn, &s.header) == nullptr) continue;
    const char* name = elf_strptr(elf, names, s.header.sh_name);
    if (name == nullptr || std::strcmp(name, wanted) != 0) continue;
    if (s.header.sh_type == SHT_NOBITS) return std::nullopt;  // a separate debug file's stub
    s.data = elf_getdata(scn, nullptr);
    return s;
  }
  return std::nullopt;
}

// ---- Unwind entries ----------------------------------------------------------------------

// A DWARF pointer encoding (DW_EH_PE_*, as .eh_frame's CIE augmentation 'R' gives it) read at
// `p`, whose vaddr is `p_vaddr`. Only what linkers emit for FDE ranges is known: absolute and
// pc-relative fixed-size values; anything else is not read (the FDE stays unnamed).
bool ReadEncoded(uint8_t encoding, const uint8_t* p, const uint8_t* end, uint64_t p_vaddr,
                 bool apply, uint64_t* out) {
  uint64_t v = 0;
  auto take = [&](size_t n, bool is_signed) {
    if (end - p < static_cast<ptrdiff_t>(n)) return false;
    uint64_t raw = 0;
    std::memcpy(&raw, p, n);  // x86-64 and its ELF files are little-endian
    if (is_signed && n < 8 && (raw >> (8 * n - 1)) & 1) raw |= ~0ull << (8 * n);
    v = raw;
    return true;
  };
  bool ok = false;
  switch (encoding & 0x0f) {
    case DW_EH_PE_absptr:
      ok = take(8, false);
      break;
    case DW_EH_PE_udata2:
      ok = take(2, false);
      break;
    case DW_EH_PE_udata4:
      ok = take(4, false);
      break;
    case DW_EH_PE_udata8:
      ok = take(8, false);
      break;
    case DW_EH_PE_sdata2:
      ok = take(2, true);
      break;
    case DW_EH_PE_sdata4:
      ok = take(4, true);
      break;
    case DW_EH_PE_sdata8:
      ok = take(8, true);
      break;
    default:
      return false;
  }
  if (!ok) return false;
  if (apply) {
    switch (encoding & 0x70) {
      case DW_EH_PE_absptr:
        break;
      case DW_EH_PE_pcrel:
        v += p_vaddr;
        break;
      default:
        return false;
    }
    if (encoding & DW_EH_PE_indirect) return false;
  }
  *out = v;
  return true;
}

// The encoding of the FDE addresses a CIE announces: 'R' in a "z..." augmentation; absolute
// pointers without one (.debug_frame, an old .eh_frame). nullopt: an augmentation not read.
std::optional<uint8_t> FdeEncoding(const Dwarf_CIE& cie) {
  const char* aug = cie.augmentation != nullptr ? cie.augmentation : "";
  if (aug[0] != 'z') return aug[0] == '\0' ? std::optional<uint8_t>(DW_EH_PE_absptr) : std::nullopt;
  const uint8_t* p = cie.augmentation_data;
  const uint8_t* end = p + cie.augmentation_data_size;
  for (const char* c = aug + 1; *c != '\0'; ++c) {
    if (*c == 'R') return p < end ? std::optional<uint8_t>(*p) : std::nullopt;
    if (*c == 'L') {
      ++p;
    } else if (*c == 'P') {
      if (p >= end) return std::nullopt;
      const size_t n = EncodedSize(*p);
      if (n == 0) return std::nullopt;
      p += 1 + n;
    } else if (*c != 'S' && *c != 'B') {
      return std::nullopt;
    }
  }
  return DW_EH_PE_absptr;
}

void ReadFdes(Elf* elf, const char* section_name, bool eh_frame, std::vector<AddressRange>* out) {
  auto section = FindSection(elf, section_name);
  if (!section || section->data == nullptr) return;
  const char* ident = elf_getident(elf, nullptr);
  if (ident == nullptr) return;
  const uint8_t* base = section->Bytes().data();
  const uint8_t* limit = base + section->Bytes().size();
  std::unordered_map<Dwarf_Off, std::optional<uint8_t>> cie_encoding;
  Dwarf_Off offset = 0;
  while (out->size() < kMaxFunctions) {
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    const int rc = dwarf_next_cfi(reinterpret_cast<const unsigned char*>(ident), section->data,
                                  eh_frame, offset, &next, &entry);
    if (rc != 0) break;  // 1: the end; -1: a malformed entry, and nothing after it is trusted
    if (dwarf_cfi_cie_p(&entry)) {
      cie_encoding[offset] = FdeEncoding(entry.cie);
    } else {
      auto it = cie_encoding.find(entry.fde.CIE_pointer);
      if (it == cie_encoding.end()) {
        // A CIE after its FDE: read it where the FDE points.
        Dwarf_Off unused = 0;
        Dwarf_CFI_Entry cie;
        std::optional<uint8_t> enc;
        if (dwarf_next_cfi(reinterpret_cast<const unsigned char*>(ident), section->data, eh_frame,
                           entry.fde.CIE_pointer, &unused, &cie) == 0 &&
            dwarf_cfi_cie_p(&cie))
          enc = FdeEncoding(cie.cie);
        it = cie_encoding.emplace(entry.fde.CIE_pointer, enc).first;
      }
      const uint8_t* p = entry.fde.start;
      uint64_t start = 0, length = 0;
      if (it->second && p >= base && p < limit) {
        const uint8_t encoding = *it->second;
        const uint64_t p_vaddr = section->header.sh_addr + static_cast<uint64_t>(p - base);
        // .debug_frame's CIEs have no augmentation: absolute 8-byte addresses (FdeEncoding).
        const size_t n = EncodedSize(encoding);
        if (n != 0 && ReadEncoded(encoding, p, limit, p_vaddr, true, &start) &&
            ReadEncoded(encoding, p + n, limit, 0, false, &length) && length != 0 && start != 0 &&
            start + length > start)
          out->push_back({start, start + length});
      }
    }
    if (next <= offset) break;
    offset = next;
  }
}

// Sorted and disjoint: where two entries overlap (malformed, or .debug_frame repeating
// .eh_frame), the earlier one is kept.
void SortDisjoint(std::vector<AddressRange>* v) {
  std::stable_sort(v->begin(), v->end(),
                   [](const AddressRange& a, const AddressRange& b) { return a.start < b.start; });
  std::vector<AddressRange> kept;
  kept.reserve(v->size());
  for (const AddressRange& r : *v)
    if (kept.empty() || r.start >= kept.back().end) kept.push_back(r);
  *v = std::move(kept);
}

// ---- PLT entries -------------------------------------------------------------------------

// GOT slot vaddr -> the symbol its relocation names (JUMP_SLOT in .rela.plt, GLOB_DAT in
// .rela.dyn for .plt.got's entries and for calls through the GOT such as _start's).
std::unordered_map<uint64_t, std::string> GotSlotNames(Elf* elf) {
  std::unordered_map<uint64_t, std::string> out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr rel{};
    if (gelf_getshdr(scn, &rel) == nullptr || rel.sh_type != SHT_RELA) continue;
    Elf_Scn* symscn = elf_getscn(elf, rel.sh_link);
    GElf_Shdr symhdr{};
    if (symscn == nullptr || gelf_getshdr(symscn, &symhdr) == nullptr ||
        (symhdr.sh_type != SHT_DYNSYM && symhdr.sh_type != SHT_SYMTAB))
      continue;
    Elf_Data* rels = elf_getdata(scn, nullptr);
    Elf_Data* syms = elf_getdata(symscn, nullptr);
    if (rels == nullptr || syms == nullptr || rel.sh_entsize == 0) continue;
    const size_t n = std::min<size_t>(rel.sh_size / rel.sh_entsize, kMaxPltEntries);
    for (size_t i = 0; i < n; ++i) {
      GElf_Rela r;
      if (gelf_getrela(rels, static_cast<int>(i), &r) == nullptr) break;
      const auto type = GELF_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      GElf_Sym sym;
      if (gelf_getsym(syms, static_cast<int>(GELF_R_SYM(r.r_info)), &sym) == nullptr) continue;
      const char* name = elf_strptr(elf, symhdr.sh_link, sym.st_name);
      if (name != nullptr && name[0] != '\0') out.emplace(r.r_offset, name);
    }
  }
  return out;
}

// The GOT slot an indirect `jmp/call [rip+disp]` at `vaddr` reads, or 0.
uint64_t RipIndirectSlot(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops,
                         uint64_t vaddr) {
  if (insn.operand_count_visible < 1) return 0;
  const ZydisDecodedOperand& op = ops[0];
  if (op.type != ZYDIS_OPERAND_TYPE_MEMORY || op.mem.base != ZYDIS_REGISTER_RIP ||
      op.mem.index != ZYDIS_REGISTER_NONE)
    return 0;
  return vaddr + insn.length + static_cast<uint64_t>(op.mem.disp.value);
}

// Each entry of .plt, .plt.sec and .plt.got is a fixed-size template the linker writes; the
// one whose indirect jump reads a named GOT slot is `NAME@plt` (as objdump and perf name it).
// With IBT (.plt.sec present) the .plt entries only push and jump to PLT0: they name nothing.
void ReadPltEntries(Elf* elf, const std::unordered_map<uint64_t, std::string>& slots,
                    std::vector<NamedRange>* out) {
  for (const char* name : {".plt", ".plt.sec", ".plt.got"}) {
    auto section = FindSection(elf, name);
    if (!section || !(section->header.sh_flags & SHF_EXECINSTR)) continue;
    const auto bytes = section->Bytes();
    uint64_t entry = section->header.sh_entsize;
    if (entry == 0) entry = 16;
    if (entry < 8 || entry > 64) continue;
    for (uint64_t at = 0; at + entry <= bytes.size() && out->size() < kMaxPltEntries; at += entry) {
      const uint64_t vaddr = section->header.sh_addr + at;
      for (uint64_t i = at; i < at + entry;) {
        ZydisDecodedInstruction insn;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ZydisDecoder64(), bytes.data() + i,
                                                 at + entry - i, &insn, ops)))
          break;
        if (insn.mnemonic == ZYDIS_MNEMONIC_JMP) {
          auto slot = slots.find(RipIndirectSlot(insn, ops, section->header.sh_addr + i));
          if (slot != slots.end()) out->push_back({vaddr, vaddr + entry, slot->second + "@plt"});
          break;
        }
        i += insn.length;
      }
    }
  }
}

// ---- _start and main ---------------------------------------------------------------------

// glibc's _start (and every libc's that follows the SysV start-up) loads main's address into
// rdi and calls __libc_start_main, directly through its PLT entry or through its GOT slot. Only
// that call proves the address is main: nothing else in _start is trusted.
uint64_t MainFromStart(std::span<const uint8_t> code, uint64_t entry,
                       const std::unordered_map<uint64_t, std::string>& slots,
                       const std::vector<NamedRange>& plt, uint64_t* start_end) {
  uint64_t rdi = 0;
  for (size_t i = 0; i < code.size() && i < kStartScanBytes;) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ZydisDecoder64(), code.data() + i, code.size() - i,
                                             &insn, ops)))
      return 0;
    const uint64_t vaddr = entry + i;
    i += insn.length;
    if (insn.meta.category == ZYDIS_CATEGORY_CALL) {
      std::string callee;
      if (uint64_t slot = RipIndirectSlot(insn, ops, vaddr)) {
        auto it = slots.find(slot);
        if (it != slots.end()) callee = it->second;
      } else if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
        const uint64_t target = vaddr + insn.length + static_cast<uint64_t>(ops[0].imm.value.s);
        for (const NamedRange& p : plt)
          if (p.start == target) callee = p.name.substr(0, p.name.size() - 4);  // "@plt"
      }
      if (callee != "__libc_start_main") return 0;
      *start_end = entry + i;
      // A hlt after the call belongs to _start (it never returns).
      if (i < code.size() && code[i] == 0xf4) ++*start_end;
      return rdi;
    }
    if (insn.operand_count_visible >= 2 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
        (ops[0].reg.value == ZYDIS_REGISTER_RDI || ops[0].reg.value == ZYDIS_REGISTER_EDI)) {
      rdi = 0;
      if (insn.mnemonic == ZYDIS_MNEMONIC_LEA && ops[1].mem.base == ZYDIS_REGISTER_RIP &&
          ops[1].mem.index == ZYDIS_REGISTER_NONE)
        rdi = vaddr + insn.length + static_cast<uint64_t>(ops[1].mem.disp.value);
      else if (insn.mnemonic == ZYDIS_MNEMONIC_MOV && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
        rdi = ops[1].imm.value.u;
    }
    if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR || insn.meta.category == ZYDIS_CATEGORY_RET)
      return 0;
  }
  return 0;
}

// The file bytes at `vaddr`, from the program headers (an executable PT_LOAD), up to `n`.
std::span<const uint8_t> CodeBytes(Elf* elf, std::span<const uint8_t> file, uint64_t vaddr,
                                   size_t n) {
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return {};
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD ||
        !(ph.p_flags & PF_X) || vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
      continue;
    const uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
    if (off >= file.size()) return {};
    const uint64_t avail = std::min<uint64_t>(ph.p_vaddr + ph.p_filesz - vaddr, file.size() - off);
    return file.subspan(off, std::min<uint64_t>(avail, n));
  }
  return {};
}

template <typename T>
const T* Containing(const std::vector<T>& sorted, uint64_t vaddr) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), vaddr,
                             [](uint64_t a, const T& r) { return a < r.start; });
  if (it == sorted.begin()) return nullptr;
  --it;
  return vaddr < it->end ? &*it : nullptr;
}

}  // namespace

CodeNames CodeNames::Read(std::span<const uint8_t> bytes) {
  CodeNames out;
  elf_version(EV_CURRENT);
  // libelf only reads the bytes (ELF_C_READ semantics for elf_memory).
  Elf* elf =
      elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
  if (elf == nullptr) return out;
  GElf_Ehdr eh;
  if (gelf_getehdr(elf, &eh) == nullptr || eh.e_machine != EM_X86_64) {
    elf_end(elf);
    return out;
  }
  ReadFdes(elf, ".eh_frame", true, &out.functions_);
  ReadFdes(elf, ".debug_frame", false, &out.functions_);
  SortDisjoint(&out.functions_);

  const auto slots = GotSlotNames(elf);
  ReadPltEntries(elf, slots, &out.names_);
  if (eh.e_entry != 0 && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN)) {
    uint64_t start_end = 0;
    const uint64_t main = MainFromStart(CodeBytes(elf, bytes, eh.e_entry, kStartScanBytes),
                                        eh.e_entry, slots, out.names_, &start_end);
    if (main != 0) {
      // _start ends where its unwind entry does (glibc gives it one), else after the call.
      const AddressRange* fde = Containing(out.functions_, eh.e_entry);
      out.names_.push_back(
          {eh.e_entry, fde && fde->start == eh.e_entry ? fde->end : start_end, "_start"});
      // main's extent is its own unwind entry; without one there is no proof of where it ends.
      const AddressRange* main_fde = Containing(out.functions_, main);
      if (main_fde != nullptr && main_fde->start == main)
        out.names_.push_back({main, main_fde->end, "main"});
    }
  }
  std::sort(out.names_.begin(), out.names_.end(),
            [](const NamedRange& a, const NamedRange& b) { return a.start < b.start; });
  std::vector<NamedRange> disjoint;
  for (NamedRange& r : out.names_)
    if (disjoint.empty() || r.start >= disjoint.back().end) disjoint.push_back(std::move(r));
  out.names_ = std::move(disjoint);
  elf_end(elf);
  return out;
}

const NamedRange* CodeNames::NameAt(uint64_t vaddr) const {
  return Containing(names_, vaddr);
}

const AddressRange* CodeNames::FunctionAt(uint64_t vaddr) const {
  return Containing(functions_, vaddr);
}

}  // namespace pathprof::decoders
