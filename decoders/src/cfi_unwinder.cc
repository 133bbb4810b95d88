#include "pathprof/decoders/cfi_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "cfi_validation.h"

namespace pathprof::decoders {

namespace {

struct RegisterState {
  std::array<uint64_t, kDwarfRegisterCount> value{};
  std::array<bool, kDwarfRegisterCount> known{};
};

class StackMemory {
 public:
  StackMemory(uint64_t start, std::span<const uint8_t> bytes) : start_(start), bytes_(bytes) {}
  bool Read(uint64_t address, uint64_t* out) const {
    if (address < start_ || bytes_.size() < 8 || address - start_ > bytes_.size() - 8) return false;
    std::memcpy(out, bytes_.data() + (address - start_), 8);
    return true;
  }

 private:
  uint64_t start_;
  std::span<const uint8_t> bytes_;
};

enum class Eval { kOk, kUnreadable, kUnsupported };

// A DWARF expression stack machine for the operations x86-64 CFI uses: register + offset (most
// rules), CFA-relative slots, the PLT's computed CFA (and, shifts, comparisons) and the signal
// trampoline's loads from the saved context.
Eval Evaluate(const Dwarf_Op* ops, size_t n, const RegisterState& regs, const uint64_t* cfa,
              const StackMemory& memory, uint64_t* result, bool* is_value) {
  std::array<uint64_t, 16> stack{};
  size_t depth = 0;
  *is_value = false;
  auto push = [&](uint64_t v) {
    if (depth == stack.size()) return false;
    stack[depth++] = v;
    return true;
  };
  auto reg = [&](uint64_t r, uint64_t* v) {
    if (r >= kDwarfRegisterCount || !regs.known[r]) return false;
    *v = regs.value[r];
    return true;
  };
  for (size_t i = 0; i < n; ++i) {
    const Dwarf_Op& op = ops[i];
    const uint8_t atom = op.atom;
    uint64_t v = 0;
    if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
      if (!push(atom - DW_OP_lit0)) return Eval::kUnsupported;
      continue;
    }
    if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
      if (!reg(atom - DW_OP_breg0, &v)) return Eval::kUnsupported;
      if (!push(v + op.number)) return Eval::kUnsupported;
      continue;
    }
    switch (atom) {
      case DW_OP_bregx:
        if (!reg(op.number, &v) || !push(v + op.number2)) return Eval::kUnsupported;
        break;
      case DW_OP_call_frame_cfa:
        if (cfa == nullptr || !push(*cfa)) return Eval::kUnsupported;
        break;
      case DW_OP_const1u:
      case DW_OP_const1s:
      case DW_OP_const2u:
      case DW_OP_const2s:
      case DW_OP_const4u:
      case DW_OP_const4s:
      case DW_OP_const8u:
      case DW_OP_const8s:
      case DW_OP_constu:
      case DW_OP_consts:
        if (!push(op.number)) return Eval::kUnsupported;
        break;
      case DW_OP_plus_uconst:
        if (depth < 1) return Eval::kUnsupported;
        stack[depth - 1] += op.number;
        break;
      case DW_OP_dup:
        if (depth < 1 || !push(stack[depth - 1])) return Eval::kUnsupported;
        break;
      case DW_OP_drop:
        if (depth < 1) return Eval::kUnsupported;
        --depth;
        break;
      case DW_OP_deref:
        if (depth < 1) return Eval::kUnsupported;
        if (!memory.Read(stack[depth - 1], &stack[depth - 1])) return Eval::kUnreadable;
        break;
      case DW_OP_neg:
        if (depth < 1) return Eval::kUnsupported;
        stack[depth - 1] = -stack[depth - 1];
        break;
      case DW_OP_stack_value:
        *is_value = true;
        break;
      case DW_OP_plus:
      case DW_OP_minus:
      case DW_OP_mul:
      case DW_OP_and:
      case DW_OP_or:
      case DW_OP_xor:
      case DW_OP_shl:
      case DW_OP_shr:
      case DW_OP_shra:
      case DW_OP_eq:
      case DW_OP_ne:
      case DW_OP_lt:
      case DW_OP_gt:
      case DW_OP_le:
      case DW_OP_ge: {
        if (depth < 2) return Eval::kUnsupported;
        const uint64_t b = stack[--depth];
        const uint64_t a = stack[depth - 1];
        const auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
        uint64_t r = 0;
        switch (atom) {
          case DW_OP_plus:
            r = a + b;
            break;
          case DW_OP_minus:
            r = a - b;
            break;
          case DW_OP_mul:
            r = a * b;
            break;
          case DW_OP_and:
            r = a & b;
            break;
          case DW_OP_or:
            r = a | b;
            break;
          case DW_OP_xor:
            r = a ^ b;
            break;
          case DW_OP_shl:
            r = b < 64 ? a << b : 0;
            break;
          case DW_OP_shr:
            r = b < 64 ? a >> b : 0;
            break;
          case DW_OP_shra:
            r = static_cast<uint64_t>(b < 64 ? sa >> b : (sa < 0 ? -1 : 0));
            break;
          case DW_OP_eq:
            r = sa == sb;
            break;
          case DW_OP_ne:
            r = sa != sb;
            break;
          case DW_OP_lt:
            r = sa < sb;
            break;
          case DW_OP_gt:
            r = sa > sb;
            break;
          case DW_OP_le:
            r = sa <= sb;
            break;
          default:
            r = sa >= sb;
            break;
        }
        stack[depth - 1] = r;
        break;
      }
      default:
        return Eval::kUnsupported;
    }
  }
  if (depth < 1) return Eval::kUnsupported;
  *result = stack[depth - 1];
  return Eval::kOk;
}

enum class Step { kOk, kOutermost, kUnreadable, kNoRule };

// One address's CFI row, copied out of libdw: finding it (dwarf_cfi_addrframe) replays the
// FDE's instructions up to the address each time, about ten times the cost of evaluating it, so
// rows are cached per image address (UnwindRow below).
struct RegisterRule {
  enum Kind : uint8_t { kUnknown, kUndefined, kSameValue, kExpression } kind = kUnknown;
  std::vector<Dwarf_Op> ops;
};
struct UnwindRow {
  int ra_register = -1;  // -1: no usable row
  bool signal_frame = false;
  std::vector<Dwarf_Op> cfa;
  std::array<RegisterRule, kDwarfRegisterCount> registers;
};

UnwindRow ReadRow(Dwarf_Frame* frame) {
  UnwindRow row;
  Dwarf_Addr start = 0, end = 0;
  bool signal = false;
  const int ra = dwarf_frame_info(frame, &start, &end, &signal);
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (ra < 0 || ra >= kDwarfRegisterCount || dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0)
    return row;
  row.ra_register = ra;
  row.signal_frame = signal;
  row.cfa.assign(ops, ops + nops);
  for (int r = 0; r < kDwarfRegisterCount; ++r) {
    Dwarf_Op ops_mem[3];
    RegisterRule& rule = row.registers[r];
    if (dwarf_frame_register(frame, r, ops_mem, &ops, &nops) != 0) continue;  // unknown
    if (nops == 0) {
      rule.kind = ops == nullptr ? RegisterRule::kSameValue : RegisterRule::kUndefined;
      continue;
    }
    rule.kind = RegisterRule::kExpression;
    rule.ops.assign(ops, ops + nops);
  }
  return row;
}

// The caller's registers from one frame's CFI row.
Step StepWithRow(const UnwindRow& row, const RegisterState& now, const StackMemory& memory,
                 RegisterState* caller) {
  if (row.ra_register < 0) return Step::kNoRule;
  uint64_t cfa = 0;
  bool is_value = false;
  Eval e = Evaluate(row.cfa.data(), row.cfa.size(), now, nullptr, memory, &cfa, &is_value);
  if (e != Eval::kOk) return e == Eval::kUnreadable ? Step::kUnreadable : Step::kNoRule;

  *caller = RegisterState{};
  for (int r = 0; r < kDwarfRegisterCount; ++r) {
    const RegisterRule& rule = row.registers[r];
    if (rule.kind == RegisterRule::kSameValue) {
      caller->value[r] = now.value[r];
      caller->known[r] = now.known[r];
    }
    if (rule.kind != RegisterRule::kExpression) continue;
    uint64_t v = 0;
    e = Evaluate(rule.ops.data(), rule.ops.size(), now, &cfa, memory, &v, &is_value);
    if (e == Eval::kUnreadable) {
      if (r == row.ra_register) return Step::kUnreadable;
      continue;
    }
    if (e != Eval::kOk) continue;
    if (!is_value && !memory.Read(v, &v)) {
      if (r == row.ra_register) return Step::kUnreadable;
      continue;
    }
    caller->value[r] = v;
    caller->known[r] = true;
  }
  // By the x86-64 ABI the CFA is the caller's stack pointer.
  caller->value[kDwarfRsp] = cfa;
  caller->known[kDwarfRsp] = true;
  if (!caller->known[row.ra_register]) return Step::kOutermost;  // DW_CFA_undefined rip: _start
  caller->value[kDwarfRip] = caller->value[row.ra_register];
  caller->known[kDwarfRip] = true;
  return Step::kOk;
}

// The classic chain: [rbp] is the caller's rbp, [rbp+8] the return address.
Step StepWithFramePointer(const RegisterState& now, const StackMemory& memory,
                          RegisterState* caller) {
  if (!now.known[kDwarfRbp]) return Step::kNoRule;
  const uint64_t rbp = now.value[kDwarfRbp];
  uint64_t saved_rbp = 0, ra = 0;
  if (!memory.Read(rbp, &saved_rbp) || !memory.Read(rbp + 8, &ra)) return Step::kUnreadable;
  *caller = RegisterState{};
  caller->value[kDwarfRbp] = saved_rbp;
  caller->value[kDwarfRsp] = rbp + 16;
  caller->value[kDwarfRip] = ra;
  caller->known[kDwarfRbp] = caller->known[kDwarfRsp] = caller->known[kDwarfRip] = true;
  return Step::kOk;
}

}  // namespace

// libdw finds the rule for each address (.eh_frame_hdr's binary search, CIE/FDE parsing, the
// ABI's default rules) and hands back DWARF expressions; evaluating them is left to us because
// libdwfl's own unwinder (dwfl_getthread_frames) wants a Dwfl with every module reported from a
// file and a thread attached, where our images are in memory (read through /proc/PID/root,
// matched by build-id, the vdso from /proc/PID/mem) and a sample is a detached copy.
struct CfiUnwinder::Tables {
  std::shared_ptr<const ElfImage> image;  // owns the bytes libelf reads
  Elf* elf = nullptr;
  Dwarf_CFI* cfi = nullptr;  // .eh_frame; null when the image has none or it was refused
  Status refused;            // why CheckImageCfi refused the image's CFI; OK otherwise
  std::unordered_map<uint64_t, UnwindRow> rows;  // by image address; bounded by kMaxRows

  // The CFI row at image address `vaddr`; null when no CFI covers it.
  const UnwindRow* Row(uint64_t vaddr) {
    if (cfi == nullptr) return nullptr;
    if (auto it = rows.find(vaddr); it != rows.end())
      return it->second.ra_register < 0 ? nullptr : &it->second;
    Dwarf_Frame* frame = nullptr;
    UnwindRow row;
    if (dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0 && frame != nullptr) {
      row = ReadRow(frame);
      std::free(frame);
    }
    if (rows.size() >= kMaxRows) {  // a program with more hot call sites than this: no caching
      scratch = std::move(row);
      return scratch.ra_register < 0 ? nullptr : &scratch;
    }
    const UnwindRow& kept = rows.emplace(vaddr, std::move(row)).first->second;
    return kept.ra_register < 0 ? nullptr : &kept;
  }
  static constexpr size_t kMaxRows = 1 << 16;
  UnwindRow scratch;
  ~Tables() {
    if (cfi) dwarf_cfi_end(cfi);
    if (elf) elf_end(elf);
  }
};

std::string_view UnwindEndName(UnwindEnd end) {
  switch (end) {
    case UnwindEnd::kOutermost:
      return "outermost";
    case UnwindEnd::kStackCopyEnd:
      return "stack_copy_end";
    case UnwindEnd::kNoImage:
      return "no_image";
    case UnwindEnd::kNoRule:
      return "no_rule";
    case UnwindEnd::kNoProgress:
      return "no_progress";
    case UnwindEnd::kMaxFrames:
      return "max_frames";
  }
  return "unknown";
}

CfiUnwinder::CfiUnwinder() {
  elf_version(EV_CURRENT);
}
CfiUnwinder::~CfiUnwinder() = default;

void CfiUnwinder::Forget(const ElfImage* image) {
  cache_.erase(image);
}

Status CfiUnwinder::RefusedCfi(const ElfImage* image) const {
  auto it = cache_.find(image);
  return it == cache_.end() ? Status::Ok() : it->second->refused;
}

CfiUnwinder::Tables* CfiUnwinder::TablesFor(const std::shared_ptr<const ElfImage>& image,
                                            UnwindResult* out) {
  auto it = cache_.find(image.get());
  if (it != cache_.end()) return it->second.get();
  // Bounded: all tables go at once and are rebuilt from their images on their next use.
  if (cache_.size() >= kMaxImages) cache_.clear();
  auto t = std::make_unique<Tables>();
  t->image = image;
  // libelf only reads the bytes (ELF_C_READ semantics for elf_memory).
  auto bytes = image->bytes();
  t->elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
  // The image's CFI comes from whoever owns the file: libdw only sees it once it has passed the
  // checks (cfi_validation.h); a refused image is unwound by frame pointers, and counted.
  const CfiCheck check = CheckImageCfi(t->elf);
  if (!check.ok()) {
    t->refused = check.status;
    out->cfi_refused.emplace_back(CfiRefusalName(check.refusal));
  } else if (check.found) {
    t->cfi = dwarf_getcfi_elf(t->elf);
  }
  return cache_.emplace(image.get(), std::move(t)).first->second.get();
}

UnwindResult CfiUnwinder::Unwind(std::span<const uint64_t> regs, uint64_t stack_start,
                                 std::span<const uint8_t> stack, const ImageAt& image_at,
                                 size_t max_frames) {
  UnwindResult out;
  if (regs.size() < kDwarfRegisterCount) {
    out.end = UnwindEnd::kNoRule;
    return out;
  }
  const StackMemory memory(stack_start, stack);
  RegisterState now;
  for (int r = 0; r < kDwarfRegisterCount; ++r) {
    now.value[r] = regs[r];
    now.known[r] = true;
  }
  out.frames.push_back(now.value[kDwarfRip]);
  bool exact_pc = true;  // the sampled pc, or a signal frame's interrupted pc
  for (;;) {
    if (out.frames.size() >= max_frames) {
      out.end = UnwindEnd::kMaxFrames;
      return out;
    }
    const uint64_t pc = now.value[kDwarfRip];
    // A return address is the instruction after the call: look up the call itself.
    const uint64_t lookup = exact_pc ? pc : pc - 1;
    const UnwindImage at = image_at(lookup);
    const UnwindRow* row = at.image ? TablesFor(at.image, &out)->Row(lookup - at.bias) : nullptr;
    RegisterState caller;
    bool signal_frame = false;
    Step step;
    if (row) {
      step = StepWithRow(*row, now, memory, &caller);
      signal_frame = row->signal_frame;
    } else {
      // No CFI covers the address (no image, JIT code, hand-written assembly): frame pointers.
      step = StepWithFramePointer(now, memory, &caller);
      if (step == Step::kOk) ++out.frame_pointer_steps;
      if (step != Step::kOk && !at.image) {
        out.end = UnwindEnd::kNoImage;
        return out;
      }
    }
    switch (step) {
      case Step::kOk:
        break;
      case Step::kOutermost:
        out.end = UnwindEnd::kOutermost;
        return out;
      case Step::kUnreadable:
        out.end = UnwindEnd::kStackCopyEnd;
        return out;
      case Step::kNoRule:
        out.end = UnwindEnd::kNoRule;
        return out;
    }
    const uint64_t next_pc = caller.value[kDwarfRip];
    if (next_pc == 0) {  // a zeroed return address: the chain's conventional end
      out.end = UnwindEnd::kOutermost;
      return out;
    }
    if (caller.value[kDwarfRsp] <= now.value[kDwarfRsp] && !signal_frame) {
      out.end = UnwindEnd::kNoProgress;
      return out;
    }
    out.frames.push_back(next_pc);
    now = caller;
    exact_pc = signal_frame;
  }
}

}  // namespace pathprof::decoders
