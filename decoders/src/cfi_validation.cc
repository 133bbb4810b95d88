#include "cfi_validation.h"

#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "eh_encoding.h"
#include "pathprof/core/hex.h"

namespace pathprof::decoders {

namespace {

// Pointer encodings (DW_EH_PE_*) this check reads: the fixed-size formats, applied absolutely or
// relative to the field (pcrel) or the section's base (datarel); `indirect` marks a pointer to
// the value. GCC, Clang and the assemblers emit pcrel|sdata4 (0x1b), indirect|pcrel|sdata4
// (0x9b) and udata4/datarel|sdata4 in .eh_frame_hdr.
constexpr uint8_t kEncodingOmit = 0xff;
constexpr uint8_t kEhFramePtrEncoding = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
constexpr uint8_t kFdeCountEncoding = DW_EH_PE_udata4;
constexpr uint8_t kTableEncoding = DW_EH_PE_datarel | DW_EH_PE_sdata4;

bool SupportedPointerEncoding(uint8_t encoding, bool may_be_indirect) {
  if (EncodedSize(encoding) == 0) return false;
  if ((encoding & DW_EH_PE_indirect) && !may_be_indirect) return false;
  const uint8_t application = encoding & 0x70;
  return application == DW_EH_PE_absptr || application == DW_EH_PE_pcrel ||
         application == DW_EH_PE_datarel;
}

// A refusal under construction: the first one found ends the walk.
struct Refused {
  CfiRefusal reason = CfiRefusal::kNone;
  std::string what;
};

// Bounded little-endian reads over [pos, end) of one section; `section` names it in messages.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, size_t pos, size_t end, const char* section)
      : bytes_(bytes), pos_(pos), end_(end), section_(section) {}
  size_t pos() const { return pos_; }
  size_t end() const { return end_; }
  bool AtEnd() const { return pos_ >= end_; }
  size_t Left() const { return end_ - pos_; }

  bool Fixed(size_t n, uint64_t* out) {
    if (Left() < n) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{bytes_[pos_ + i]} << (8 * i);
    pos_ += n;
    *out = v;
    return true;
  }
  // The next `n` bytes as a cursor of their own, skipped here; the caller checked Left() >= n.
  Cursor Take(size_t n) {
    Cursor sub(bytes_, pos_, pos_ + n, section_);
    pos_ += n;
    return sub;
  }
  bool Skip(uint64_t n) {
    if (Left() < n) return false;
    pos_ += n;
    return true;
  }
  // At most ten bytes, the value within 64 bits.
  bool Uleb(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (AtEnd()) return false;
      const uint8_t b = bytes_[pos_++];
      if (shift == 63 && (b & 0x7e)) return false;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool Sleb(int64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (AtEnd()) return false;
      const uint8_t b = bytes_[pos_++];
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        if (shift + 7 < 64 && (b & 0x40)) v |= ~uint64_t{0} << (shift + 7);
        *out = static_cast<int64_t>(v);
        return true;
      }
    }
    return false;
  }
  const char* section() const { return section_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_;
  size_t end_;
  const char* section_;
};

struct CieInfo {
  size_t offset = 0;
  bool sized_augmentation = false;  // 'z': FDEs carry a length before their augmentation data
  uint8_t fde_encoding = DW_EH_PE_absptr;
};

// Where a program came from, for messages: "CIE at .eh_frame offset 0x40".
struct ProgramSite {
  const char* kind;
  size_t offset;
  std::string Name() const {
    return std::string(kind) + " at .eh_frame offset " + HexAddress(offset);
  }
};

Refused Fail(CfiRefusal reason, std::string what) {
  return {reason, std::move(what)};
}

// Decodes one CIE's initial instructions or one FDE's instructions opcode by opcode, as
// libdw's execute_cfi reads them, refusing what libdw would size or copy by the input.
Refused CheckProgram(Cursor c, const ProgramSite& site, bool in_cie, uint8_t fde_encoding) {
  int depth = 0;
  auto at = [&](size_t pos) { return site.Name() + ", instruction at " + HexAddress(pos); };
  while (!c.AtEnd()) {
    const size_t op_at = c.pos();
    uint64_t op = 0, reg = 0, u = 0;
    int64_t s = 0;
    (void)c.Fixed(1, &op);
    const char* name = nullptr;
    bool truncated = false;
    auto check_reg = [&](uint64_t r, const char* op_name) -> Refused {
      if (r < kCfiRegisterLimit) return {};
      return Fail(CfiRefusal::kRegisterOutOfRange, at(op_at) + ": " + op_name + " names register " +
                                                       std::to_string(r) +
                                                       "; x86-64 DWARF register numbers end at " +
                                                       std::to_string(kCfiRegisterLimit - 1));
    };
    auto block = [&]() -> Refused {
      if (!c.Uleb(&u)) return Fail(CfiRefusal::kMalformed, at(op_at) + ": truncated block length");
      if (u > kCfiMaxExpressionBytes)
        return Fail(CfiRefusal::kTooLarge, at(op_at) + ": expression of " + std::to_string(u) +
                                               " bytes, above the bound of " +
                                               std::to_string(kCfiMaxExpressionBytes));
      if (!c.Skip(u))
        return Fail(CfiRefusal::kMalformed, at(op_at) + ": expression runs past the entry");
      return {};
    };
    Refused r;
    const uint8_t primary = static_cast<uint8_t>(op & 0xc0);
    if (primary == DW_CFA_advance_loc || primary == DW_CFA_restore) {
      // advance_loc moves to the next row and restore names the CIE's rule: neither has a
      // meaning inside the CIE, and libdw rejects both there.
      if (in_cie)
        return Fail(CfiRefusal::kMalformed,
                    at(op_at) + ": row advance or restore in a CIE's initial instructions");
      continue;  // the register of restore is 6 bits: below the limit
    }
    if (primary == DW_CFA_offset) {
      truncated = !c.Uleb(&u);
    } else {
      switch (op) {
        case DW_CFA_nop:
        case DW_CFA_remember_state:
        case DW_CFA_restore_state:
          break;
        case DW_CFA_set_loc:
        case DW_CFA_advance_loc1:
        case DW_CFA_advance_loc2:
        case DW_CFA_advance_loc4:
          if (in_cie)
            return Fail(CfiRefusal::kMalformed,
                        at(op_at) + ": row advance in a CIE's initial instructions");
          truncated = !c.Skip(op == DW_CFA_set_loc        ? EncodedSize(fde_encoding)
                              : op == DW_CFA_advance_loc1 ? 1
                              : op == DW_CFA_advance_loc2 ? 2
                                                          : 4);
          break;
        case DW_CFA_offset_extended:
        case DW_CFA_val_offset:
        case DW_CFA_GNU_negative_offset_extended:
        case DW_CFA_def_cfa:
          name = op == DW_CFA_def_cfa           ? "DW_CFA_def_cfa"
                 : op == DW_CFA_val_offset      ? "DW_CFA_val_offset"
                 : op == DW_CFA_offset_extended ? "DW_CFA_offset_extended"
                                                : "DW_CFA_GNU_negative_offset_extended";
          truncated = !c.Uleb(&reg) || !c.Uleb(&u);
          break;
        case DW_CFA_offset_extended_sf:
        case DW_CFA_val_offset_sf:
        case DW_CFA_def_cfa_sf:
          name = op == DW_CFA_def_cfa_sf      ? "DW_CFA_def_cfa_sf"
                 : op == DW_CFA_val_offset_sf ? "DW_CFA_val_offset_sf"
                                              : "DW_CFA_offset_extended_sf";
          truncated = !c.Uleb(&reg) || !c.Sleb(&s);
          break;
        case DW_CFA_restore_extended:
          if (in_cie)
            return Fail(CfiRefusal::kMalformed,
                        at(op_at) + ": DW_CFA_restore_extended in a CIE's initial instructions");
          name = "DW_CFA_restore_extended";
          truncated = !c.Uleb(&reg);
          break;
        case DW_CFA_undefined:
        case DW_CFA_same_value:
        case DW_CFA_def_cfa_register:
          name = op == DW_CFA_undefined    ? "DW_CFA_undefined"
                 : op == DW_CFA_same_value ? "DW_CFA_same_value"
                                           : "DW_CFA_def_cfa_register";
          truncated = !c.Uleb(&reg);
          break;
        case DW_CFA_register:
          name = "DW_CFA_register";
          truncated = !c.Uleb(&reg) || !c.Uleb(&u);
          if (!truncated) r = check_reg(u, name);
          break;
        case DW_CFA_def_cfa_offset:
        case DW_CFA_GNU_args_size:
          truncated = !c.Uleb(&u);
          break;
        case DW_CFA_def_cfa_offset_sf:
          truncated = !c.Sleb(&s);
          break;
        case DW_CFA_def_cfa_expression:
          r = block();
          break;
        case DW_CFA_expression:
        case DW_CFA_val_expression:
          name = op == DW_CFA_expression ? "DW_CFA_expression" : "DW_CFA_val_expression";
          truncated = !c.Uleb(&reg);
          if (!truncated) r = block();
          break;
        default:
          return Fail(CfiRefusal::kUnknownOpcode,
                      at(op_at) + ": call frame instruction " + HexAddress(op) +
                          " is not one x86-64 CFI uses (DWARF 5 and the GNU extensions)");
      }
    }
    if (truncated) return Fail(CfiRefusal::kMalformed, at(op_at) + ": operand runs past the entry");
    if (r.reason != CfiRefusal::kNone) return r;
    if (name != nullptr) {
      r = check_reg(reg, name);
      if (r.reason != CfiRefusal::kNone) return r;
    }
    if (op == DW_CFA_remember_state && ++depth > kCfiMaxRememberDepth)
      return Fail(CfiRefusal::kStateTooDeep, at(op_at) +
                                                 ": DW_CFA_remember_state nested deeper than " +
                                                 std::to_string(kCfiMaxRememberDepth) + " levels");
    if (op == DW_CFA_restore_state && depth-- == 0)
      return Fail(CfiRefusal::kMalformed,
                  at(op_at) + ": DW_CFA_restore_state with no remembered state");
  }
  return {};
}

// A CIE's fields after its id, as dwarf_next_cfi and intern_new_cie read them.
Refused CheckCie(Cursor c, size_t offset, CieInfo* cie) {
  const ProgramSite site{"CIE", offset};
  auto malformed = [&](const std::string& what) {
    return Fail(CfiRefusal::kMalformed, site.Name() + ": " + what);
  };
  cie->offset = offset;
  uint64_t version = 0;
  if (!c.Fixed(1, &version)) return malformed("no version");
  if (version != 1 && version != 3)
    return Fail(CfiRefusal::kUnsupported,
                site.Name() + ": version " + std::to_string(version) + " (1 and 3 are read)");
  // The augmentation string: empty, or 'z' then at most one each of L, P, R, S.
  std::string augmentation;
  for (;;) {
    uint64_t ch = 0;
    if (!c.Fixed(1, &ch)) return malformed("augmentation string runs past the entry");
    if (ch == 0) break;
    augmentation.push_back(static_cast<char>(ch));
    if (augmentation.size() > 5)
      return Fail(CfiRefusal::kUnsupported, site.Name() + ": augmentation longer than \"zLPRS\"");
  }
  if (!augmentation.empty()) {
    bool ok = augmentation[0] == 'z';
    for (size_t i = 1; ok && i < augmentation.size(); ++i)
      ok = std::strchr("LPRS", augmentation[i]) != nullptr &&
           augmentation.find(augmentation[i], i + 1) == std::string::npos;
    if (!ok)
      return Fail(CfiRefusal::kUnsupported, site.Name() + ": augmentation \"" + augmentation +
                                                "\" (read: z with L, P, R, S)");
  }
  uint64_t code_alignment = 0, ra = 0;
  int64_t data_alignment = 0;
  if (!c.Uleb(&code_alignment) || !c.Sleb(&data_alignment)) return malformed("truncated factors");
  if (code_alignment == 0 || code_alignment > 255 || data_alignment == 0 || data_alignment < -255 ||
      data_alignment > 255)
    return Fail(CfiRefusal::kUnsupported,
                site.Name() + ": alignment factors " + std::to_string(code_alignment) + ", " +
                    std::to_string(data_alignment) + " (x86-64 uses 1 and -8)");
  if (!(version == 1 ? c.Fixed(1, &ra) : c.Uleb(&ra)))
    return malformed("truncated return address register");
  if (ra >= kCfiRegisterLimit)
    return Fail(CfiRefusal::kRegisterOutOfRange, site.Name() + ": return address register " +
                                                     std::to_string(ra) +
                                                     "; x86-64 DWARF register numbers end at " +
                                                     std::to_string(kCfiRegisterLimit - 1));
  cie->sized_augmentation = !augmentation.empty();
  if (cie->sized_augmentation) {
    uint64_t size = 0;
    if (!c.Uleb(&size) || size > c.Left())
      return malformed("augmentation data runs past the entry");
    Cursor aug = c.Take(size);  // 'z' bounds the data: what the string names must fit in it
    for (size_t i = 1; i < augmentation.size(); ++i) {
      uint64_t encoding = 0;
      if (augmentation[i] == 'S') continue;
      if (!aug.Fixed(1, &encoding)) return malformed("augmentation data shorter than its string");
      const auto enc = static_cast<uint8_t>(encoding);
      if (augmentation[i] == 'L') {
        if (enc != kEncodingOmit && !SupportedPointerEncoding(enc, true))
          return Fail(CfiRefusal::kUnsupported, site.Name() + ": LSDA encoding " + HexAddress(enc));
      } else if (augmentation[i] == 'R') {
        if (!SupportedPointerEncoding(enc, false))
          return Fail(CfiRefusal::kUnsupported, site.Name() + ": FDE encoding " + HexAddress(enc));
        cie->fde_encoding = enc;
      } else {  // 'P': the personality routine's pointer follows its encoding
        if (!SupportedPointerEncoding(enc, true))
          return Fail(CfiRefusal::kUnsupported,
                      site.Name() + ": personality encoding " + HexAddress(enc));
        if (!aug.Skip(EncodedSize(enc)))
          return malformed("personality pointer runs past the augmentation data");
      }
    }
  }
  return CheckProgram(c, site, true, cie->fde_encoding);
}

// An FDE's fields after its CIE pointer, as intern_fde reads them.
Refused CheckFde(Cursor c, size_t offset, const CieInfo& cie) {
  const ProgramSite site{"FDE", offset};
  const size_t n = EncodedSize(cie.fde_encoding);
  if (!c.Skip(n) || !c.Skip(n))
    return Fail(CfiRefusal::kMalformed, site.Name() + ": truncated address range");
  if (cie.sized_augmentation) {
    uint64_t size = 0;
    if (!c.Uleb(&size) || !c.Skip(size))
      return Fail(CfiRefusal::kMalformed, site.Name() + ": augmentation data runs past the entry");
  }
  return CheckProgram(c, site, false, cie.fde_encoding);
}

// The walk libdw's __libdw_find_fde makes when no table helps: entry after entry up to a zero
// length or the last 4 bytes. `fdes` gets each FDE's offset, in order.
Refused WalkEntries(std::span<const uint8_t> bytes, std::vector<CieInfo>* cies,
                    std::vector<size_t>* fdes) {
  size_t off = 0;
  while (off + 4 < bytes.size()) {
    Cursor c(bytes, off, bytes.size(), ".eh_frame");
    uint64_t length = 0, id = 0;
    (void)c.Fixed(4, &length);
    if (length == 0) break;  // the terminator
    auto where = [off] { return "entry at .eh_frame offset " + HexAddress(off); };
    // Without section headers libdw reads .eh_frame to the end of the file: the walk's bound
    // is where its entries stop, not the bytes it was given.
    if (off > kCfiMaxSectionBytes)
      return Fail(CfiRefusal::kTooLarge, where() + ": .eh_frame runs on past " +
                                             std::to_string(kCfiMaxSectionBytes) + " bytes");
    if (length == 0xffffffff)
      return Fail(CfiRefusal::kUnsupported, where() + ": 64-bit length (x86-64 .eh_frame uses 32)");
    if (length > c.Left() || length < 5)
      return Fail(CfiRefusal::kMalformed, where() + ": length " + HexAddress(length) +
                                              " runs past the section or holds no id");
    if (length > kCfiMaxEntryBytes)
      return Fail(CfiRefusal::kTooLarge, where() + ": " + std::to_string(length) +
                                             " bytes, above the bound of " +
                                             std::to_string(kCfiMaxEntryBytes));
    const size_t id_at = c.pos();
    const size_t next = id_at + length;
    Cursor body(bytes, id_at, next, ".eh_frame");
    (void)body.Fixed(4, &id);
    Refused r;
    if (id == 0) {
      CieInfo cie;
      r = CheckCie(body, off, &cie);
      cies->push_back(cie);
    } else {
      // An .eh_frame CIE pointer counts back from where it stands.
      const size_t cie_at = id <= id_at ? id_at - id : SIZE_MAX;
      auto it = std::lower_bound(cies->begin(), cies->end(), cie_at,
                                 [](const CieInfo& a, size_t o) { return a.offset < o; });
      if (it == cies->end() || it->offset != cie_at)
        return Fail(CfiRefusal::kMalformed, "FDE at .eh_frame offset " + HexAddress(off) +
                                                ": its CIE pointer " + HexAddress(id) +
                                                " does not lead to a CIE the walk found");
      r = CheckFde(body, off, *it);
      fdes->push_back(off);
    }
    if (r.reason != CfiRefusal::kNone) return r;
    off = next;
  }
  return {};
}

struct HdrTable {
  uint64_t eh_frame_vaddr = 0;
  size_t entries = 0;  // 0: no search table, libdw walks
  size_t table_at = 0;
};

// .eh_frame_hdr's header as parse_eh_frame_hdr reads it, in the encodings linkers write.
Refused ParseHdr(std::span<const uint8_t> hdr, uint64_t hdr_vaddr, HdrTable* out) {
  auto fail = [](CfiRefusal reason, const std::string& what) {
    return Fail(reason, ".eh_frame_hdr: " + what);
  };
  if (hdr.size() > kCfiMaxSectionBytes)
    return fail(CfiRefusal::kTooLarge, std::to_string(hdr.size()) + " bytes");
  Cursor c(hdr, 0, hdr.size(), ".eh_frame_hdr");
  uint64_t version = 0, ptr_enc = 0, count_enc = 0, table_enc = 0, v = 0;
  if (!c.Fixed(1, &version) || !c.Fixed(1, &ptr_enc) || !c.Fixed(1, &count_enc) ||
      !c.Fixed(1, &table_enc))
    return fail(CfiRefusal::kMalformed, "shorter than its 4-byte header");
  if (version != 1) return fail(CfiRefusal::kUnsupported, "version " + std::to_string(version));
  if (ptr_enc != kEhFramePtrEncoding)
    return fail(CfiRefusal::kUnsupported, ".eh_frame pointer encoding " + HexAddress(ptr_enc));
  if (!c.Fixed(4, &v)) return fail(CfiRefusal::kMalformed, "truncated .eh_frame pointer");
  out->eh_frame_vaddr = hdr_vaddr + 4 + static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)});
  if (count_enc == kEncodingOmit) return {};
  if (count_enc != kFdeCountEncoding)
    return fail(CfiRefusal::kUnsupported, "FDE count encoding " + HexAddress(count_enc));
  uint64_t count = 0;
  if (!c.Fixed(4, &count)) return fail(CfiRefusal::kMalformed, "truncated FDE count");
  if (count == 0 || table_enc == kEncodingOmit) return {};
  if (table_enc != kTableEncoding)
    return fail(CfiRefusal::kUnsupported, "table encoding " + HexAddress(table_enc));
  if (count > c.Left() / 8)
    return fail(CfiRefusal::kMalformed,
                std::to_string(count) + " table entries in " + std::to_string(c.Left()) + " bytes");
  out->entries = count;
  out->table_at = c.pos();
  return {};
}

// Every search table entry must name the start of an FDE the walk found: libdw parses an entry
// wherever the table points, so one in the middle of an FDE's instructions would make it read
// bytes this check never saw as an entry.
Refused CheckTable(const EhFrameSource& source, const HdrTable& table,
                   const std::vector<size_t>& fdes) {
  Cursor c(source.hdr, table.table_at, source.hdr.size(), ".eh_frame_hdr");
  int64_t last_start = INT64_MIN;
  for (size_t i = 0; i < table.entries; ++i) {
    uint64_t start = 0, fde = 0;
    (void)c.Fixed(4, &start);  // ParseHdr checked the table's size
    (void)c.Fixed(4, &fde);
    const int64_t start_s = static_cast<int32_t>(start);
    const uint64_t fde_vaddr =
        source.hdr_vaddr + static_cast<uint64_t>(int64_t{static_cast<int32_t>(fde)});
    const uint64_t offset = fde_vaddr - source.eh_frame_vaddr;
    auto where = [i] { return ".eh_frame_hdr table entry " + std::to_string(i); };
    if (start_s < last_start)
      return Fail(CfiRefusal::kSearchTableMismatch,
                  where() + ": not sorted by address (a binary search would miss FDEs)");
    last_start = start_s;
    if (!std::binary_search(fdes.begin(), fdes.end(), offset))
      return Fail(CfiRefusal::kSearchTableMismatch, where() + " names .eh_frame offset " +
                                                        HexAddress(offset) +
                                                        ", which is not the start of an FDE");
  }
  return {};
}

CfiCheck Finish(const Refused& r, CfiCheck check) {
  check.refusal = r.reason;
  if (r.reason != CfiRefusal::kNone)
    check.status =
        Error(r.reason == CfiRefusal::kUnsupported ? ErrorCode::kUnsupported
              : r.reason == CfiRefusal::kTooLarge  ? ErrorCode::kResourceExhausted
                                                   : ErrorCode::kCorrupt,
              "call frame information refused (" + std::string(CfiRefusalName(r.reason)) +
                  "): " + r.what + "; the image is unwound by frame pointers instead");
  return check;
}

}  // namespace

std::string_view CfiRefusalName(CfiRefusal reason) {
  switch (reason) {
    case CfiRefusal::kNone:
      return "none";
    case CfiRefusal::kMalformed:
      return "malformed";
    case CfiRefusal::kUnsupported:
      return "unsupported";
    case CfiRefusal::kRegisterOutOfRange:
      return "register_out_of_range";
    case CfiRefusal::kStateTooDeep:
      return "remember_state_too_deep";
    case CfiRefusal::kUnknownOpcode:
      return "unknown_opcode";
    case CfiRefusal::kSearchTableMismatch:
      return "search_table_mismatch";
    case CfiRefusal::kTooLarge:
      return "too_large";
  }
  return "unknown";
}

CfiCheck CheckEhFrame(const EhFrameSource& source) {
  CfiCheck check;
  check.found = true;
  HdrTable table;
  if (source.has_hdr) {
    Refused r = ParseHdr(source.hdr, source.hdr_vaddr, &table);
    if (r.reason != CfiRefusal::kNone) return Finish(r, check);
    if (table.entries > 0 && table.eh_frame_vaddr != source.eh_frame_vaddr)
      return Finish(Fail(CfiRefusal::kSearchTableMismatch,
                         ".eh_frame_hdr names .eh_frame at " + HexAddress(table.eh_frame_vaddr) +
                             ", the section is at " + HexAddress(source.eh_frame_vaddr)),
                    check);
  }
  std::vector<CieInfo> cies;
  std::vector<size_t> fdes;
  Refused r = WalkEntries(source.eh_frame, &cies, &fdes);
  check.cies = cies.size();
  check.fdes = fdes.size();
  if (r.reason == CfiRefusal::kNone && table.entries > 0) {
    r = CheckTable(source, table, fdes);
    check.table_entries = table.entries;
  }
  return Finish(r, check);
}

CfiCheck CheckImageCfi(Elf* elf) {
  CfiCheck none;  // what libdw would find nothing in
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return none;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) return none;
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
      ehdr.e_machine != EM_X86_64) {
    none.found = true;
    return Finish(Fail(CfiRefusal::kUnsupported, "not a little-endian x86-64 ELF file"), none);
  }
  // Section headers first, as dwarf_getcfi_elf: the first .eh_frame/.eh_frame_hdr pair, else
  // the last .eh_frame alone.
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return none;
  if (shstrndx != 0) {
    Elf_Scn* eh_scn = nullptr;
    Elf_Scn* hdr_scn = nullptr;
    GElf_Shdr eh_shdr{}, hdr_shdr{};
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (name == nullptr || shdr.sh_type == SHT_NOBITS) continue;
      if (std::strcmp(name, ".eh_frame_hdr") == 0) {
        hdr_scn = scn;
        hdr_shdr = shdr;
      } else if (std::strcmp(name, ".eh_frame") == 0) {
        eh_scn = scn;
        eh_shdr = shdr;
      } else {
        continue;
      }
      if (eh_scn != nullptr && hdr_scn != nullptr) break;
    }
    if (eh_scn != nullptr) {
      Elf_Data* data = elf_rawdata(eh_scn, nullptr);
      if (data == nullptr || data->d_buf == nullptr) return none;
      EhFrameSource source;
      source.eh_frame = {static_cast<const uint8_t*>(data->d_buf), data->d_size};
      source.eh_frame_vaddr = eh_shdr.sh_addr;
      if (hdr_scn != nullptr) {
        Elf_Data* hdr = elf_rawdata(hdr_scn, nullptr);
        if (hdr != nullptr && hdr->d_buf != nullptr) {
          source.has_hdr = true;
          source.hdr = {static_cast<const uint8_t*>(hdr->d_buf), hdr->d_size};
          source.hdr_vaddr = hdr_shdr.sh_addr;
        }
      }
      return CheckEhFrame(source);
    }
  }
  // No such section: the PT_GNU_EH_FRAME segment names .eh_frame, which libdw then reads to the
  // end of the file.
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return none;
  size_t file_size = 0;
  const char* raw = elf_rawfile(elf, &file_size);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr) return none;
    if (phdr.p_type != PT_GNU_EH_FRAME) continue;
    none.found = true;
    if (raw == nullptr || phdr.p_offset > file_size || phdr.p_filesz > file_size - phdr.p_offset)
      return Finish(Fail(CfiRefusal::kMalformed, "PT_GNU_EH_FRAME lies outside the file"), none);
    EhFrameSource source;
    source.has_hdr = true;
    source.hdr = {reinterpret_cast<const uint8_t*>(raw) + phdr.p_offset, phdr.p_filesz};
    source.hdr_vaddr = phdr.p_vaddr;
    HdrTable table;
    Refused r = ParseHdr(source.hdr, source.hdr_vaddr, &table);
    if (r.reason != CfiRefusal::kNone) return Finish(r, none);
    const uint64_t eh_offset = table.eh_frame_vaddr - phdr.p_vaddr + phdr.p_offset;
    if (eh_offset >= file_size)
      return Finish(
          Fail(CfiRefusal::kMalformed,
               ".eh_frame_hdr names .eh_frame outside the file, at " + HexAddress(eh_offset)),
          none);
    source.eh_frame = {reinterpret_cast<const uint8_t*>(raw) + eh_offset, file_size - eh_offset};
    source.eh_frame_vaddr = table.eh_frame_vaddr;
    return CheckEhFrame(source);
  }
  return none;
}

CfiCheck CheckElfFileCfi(std::span<const uint8_t> file) {
  elf_version(EV_CURRENT);
  // libelf only reads the bytes (ELF_C_READ semantics for elf_memory).
  Elf* elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(file.data())), file.size());
  CfiCheck check = CheckImageCfi(elf);
  if (elf != nullptr) elf_end(elf);
  return check;
}

}  // namespace pathprof::decoders
