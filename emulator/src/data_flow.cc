#include "data_flow.h"

#include <initializer_list>

#include "pathprof/decoders/x86_idioms.h"

namespace pathprof::emulator {
namespace {

// The RFLAGS bits the interpreter models (machine.h's kCF ... kOF), in Zydis's bit positions,
// which are the architectural ones.
constexpr uint32_t kModelledFlags = ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF |
                                    ZYDIS_CPUFLAG_ZF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_DF |
                                    ZYDIS_CPUFLAG_OF;

enum class Kind : uint8_t { kSkip, kGpr, kVector, kMask, kControl };
struct Reg {
  Kind kind = Kind::kSkip;
  uint8_t index = 0;
  bool whole = false;  // a write replaces the whole register (64- and 32-bit GPR writes)
};

Reg Classify(ZydisRegister r) {
  Reg out;
  if (r == ZYDIS_REGISTER_NONE) return out;
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8:
      out.kind = Kind::kGpr;
      out.index = r >= ZYDIS_REGISTER_AH && r <= ZYDIS_REGISTER_BH
                      ? static_cast<uint8_t>(r - ZYDIS_REGISTER_AH)
                      : static_cast<uint8_t>(ZydisRegisterGetId(
                            ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r)));
      return out;
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
      out.kind = Kind::kGpr;
      out.index = static_cast<uint8_t>(
          ZydisRegisterGetId(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r)));
      out.whole = ZydisRegisterGetClass(r) != ZYDIS_REGCLASS_GPR16;
      return out;
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
      out.kind = Kind::kVector;
      out.index = static_cast<uint8_t>(ZydisRegisterGetId(r));
      return out;
    case ZYDIS_REGCLASS_MASK:
      out.kind = Kind::kMask;
      out.index = static_cast<uint8_t>(ZydisRegisterGetId(r));
      return out;
    case ZYDIS_REGCLASS_FLAGS:    // per flag, from cpu_flags
    case ZYDIS_REGCLASS_IP:       // control flow: the branch checks
    case ZYDIS_REGCLASS_SEGMENT:  // fs/gs bases are in every snapshot
      return out;
    default:
      // mxcsr, the x87 control and status words, and what the interpreter does not model (an
      // instruction using those ends the window anyway): one shared "control" state.
      out.kind = Kind::kControl;
      return out;
  }
}

bool IsStringInstruction(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_MOVSB:
    case ZYDIS_MNEMONIC_MOVSW:
    case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_MOVSQ:
    case ZYDIS_MNEMONIC_STOSB:
    case ZYDIS_MNEMONIC_STOSW:
    case ZYDIS_MNEMONIC_STOSD:
    case ZYDIS_MNEMONIC_STOSQ:
    case ZYDIS_MNEMONIC_LODSB:
    case ZYDIS_MNEMONIC_LODSW:
    case ZYDIS_MNEMONIC_LODSD:
    case ZYDIS_MNEMONIC_LODSQ:
    case ZYDIS_MNEMONIC_CMPSB:
    case ZYDIS_MNEMONIC_CMPSW:
    case ZYDIS_MNEMONIC_CMPSD:
    case ZYDIS_MNEMONIC_CMPSQ:
    case ZYDIS_MNEMONIC_SCASB:
    case ZYDIS_MNEMONIC_SCASW:
    case ZYDIS_MNEMONIC_SCASD:
    case ZYDIS_MNEMONIC_SCASQ:
      return true;
    default:
      return false;
  }
}

bool IsCompareString(ZydisMnemonic mn) {
  return mn == ZYDIS_MNEMONIC_CMPSB || mn == ZYDIS_MNEMONIC_CMPSW || mn == ZYDIS_MNEMONIC_CMPSD ||
         mn == ZYDIS_MNEMONIC_CMPSQ || mn == ZYDIS_MNEMONIC_SCASB || mn == ZYDIS_MNEMONIC_SCASW ||
         mn == ZYDIS_MNEMONIC_SCASD || mn == ZYDIS_MNEMONIC_SCASQ;
}

// Instructions whose hidden stack or string registers only step by a constant (or by rcx under
// rep): those registers are addresses, kept apart from the data the instruction moves. Any
// other instruction's hidden registers are data like the rest (the union rule).
bool StepsAddressRegisters(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_PUSH:
    case ZYDIS_MNEMONIC_POP:
    case ZYDIS_MNEMONIC_CALL:
    case ZYDIS_MNEMONIC_RET:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFQ:
    case ZYDIS_MNEMONIC_POPF:
    case ZYDIS_MNEMONIC_POPFQ:
      return true;
    default:
      return IsStringInstruction(mn);
  }
}

// Whether the instruction's two sources are one register: operands 0 and 1 of the two-operand
// (legacy) forms, 1 and 2 of the three-operand (VEX/EVEX) ones. Merge-masked EVEX forms keep
// the destination's elements, so they never qualify.
bool SameSources(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX &&
      insn.avx.mask.mode == ZYDIS_MASK_MODE_MERGING && insn.avx.mask.reg != ZYDIS_REGISTER_K0)
    return false;
  int first = -1, second = -1;
  int seen = 0;
  for (uint8_t i = 0; i < insn.operand_count_visible; ++i) {
    if (ops[i].encoding == ZYDIS_OPERAND_ENCODING_MASK) continue;
    const bool three = insn.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX ||
                       insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX;
    if (seen == (three ? 1 : 0)) first = i;
    if (seen == (three ? 2 : 1)) second = i;
    ++seen;
  }
  return first >= 0 && second >= 0 && ops[first].type == ZYDIS_OPERAND_TYPE_REGISTER &&
         ops[second].type == ZYDIS_OPERAND_TYPE_REGISTER &&
         ops[first].reg.value == ops[second].reg.value;
}

// Legacy SSE instructions whose destination xmm is all written from their sources (moves of a
// whole register, loads that zero the rest). Every other legacy destination is a merge.
bool LegacyWritesWholeXmm(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_MOVDQA:
    case ZYDIS_MNEMONIC_MOVDQU:
    case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_MOVUPS:
    case ZYDIS_MNEMONIC_MOVAPD:
    case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_LDDQU:
    case ZYDIS_MNEMONIC_MOVNTDQA:
    case ZYDIS_MNEMONIC_MOVD:  // to xmm: zero-extended
    case ZYDIS_MNEMONIC_MOVQ:
    case ZYDIS_MNEMONIC_PSHUFD:
      return true;
    case ZYDIS_MNEMONIC_MOVSS:  // from memory: the rest zeroed; from a register: kept
    case ZYDIS_MNEMONIC_MOVSD:
      return insn.operand_count_visible >= 2 && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY;
    default:
      return decoders::IsDependencyBreakingIdiom(insn.mnemonic) && SameSources(insn, ops);
  }
}

// Where Zydis's flag table says an instruction sets a flag to a constant and the SDM agrees.
// Elsewhere such a flag counts as computed from the inputs: the table has errors (it gives blsi
// CF = 0, where the CPU sets CF when the source is not zero; found by emulator_differential_test).
bool ConstantFlagsTrusted(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_TEST:
    case ZYDIS_MNEMONIC_CLC:
    case ZYDIS_MNEMONIC_STC:
    case ZYDIS_MNEMONIC_CLD:
    case ZYDIS_MNEMONIC_STD:
    case ZYDIS_MNEMONIC_POPCNT:
    case ZYDIS_MNEMONIC_PTEST:
    case ZYDIS_MNEMONIC_VPTEST:
    case ZYDIS_MNEMONIC_ANDN:
    case ZYDIS_MNEMONIC_BZHI:
    case ZYDIS_MNEMONIC_BLSR:
    case ZYDIS_MNEMONIC_BLSMSK:
      return true;
    default:
      return false;
  }
}

}  // namespace

DataFlow SummariseDataFlow(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  DataFlow f;
  const auto mn = insn.mnemonic;
  // Hints that access nothing: their memory operand is never read, whatever it holds.
  if (mn == ZYDIS_MNEMONIC_NOP || mn == ZYDIS_MNEMONIC_ENDBR64 || mn == ZYDIS_MNEMONIC_PREFETCHT0 ||
      mn == ZYDIS_MNEMONIC_PREFETCHT1 || mn == ZYDIS_MNEMONIC_PREFETCHT2 ||
      mn == ZYDIS_MNEMONIC_PREFETCHNTA || mn == ZYDIS_MNEMONIC_PREFETCHW)
    return f;
  const bool steps = StepsAddressRegisters(mn);
  const bool counted =
      (insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) !=
      0;
  const bool vex_or_evex = insn.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX ||
                           insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX;
  const bool merge_masked = insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX &&
                            insn.avx.mask.mode == ZYDIS_MASK_MODE_MERGING &&
                            insn.avx.mask.reg != ZYDIS_REGISTER_K0;
  // The registers that form the addresses of memory operands (lea's is data: it computes, it
  // does not access).
  uint16_t bases = 0;
  for (uint8_t i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& o = ops[i];
    if (o.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
    for (ZydisRegister r : {o.mem.base, o.mem.index}) {
      const Reg g = Classify(r);
      if (g.kind != Kind::kGpr) continue;
      if (o.mem.type == ZYDIS_MEMOP_TYPE_AGEN)
        f.gpr_read |= static_cast<uint16_t>(1u << g.index);
      else
        bases |= static_cast<uint16_t>(1u << g.index);
    }
  }
  f.address = bases;
  for (uint8_t i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& o = ops[i];
    if (o.type != ZYDIS_OPERAND_TYPE_REGISTER) continue;
    const Reg g = Classify(o.reg.value);
    const bool read = (o.actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
    const bool write = (o.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
    // bsf and bsr leave their destination as it was when the source is zero (what the CPUs
    // do; the SDM leaves it undefined), and Zydis marks it written: a merge, as conditional
    // writes are (found by emulator_fuzz).
    const bool conditional = (o.actions & ZYDIS_OPERAND_ACTION_CONDWRITE) != 0 ||
                             mn == ZYDIS_MNEMONIC_BSF || mn == ZYDIS_MNEMONIC_BSR;
    const bool hidden = o.visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT;
    if (o.reg.value == ZYDIS_REGISTER_RFLAGS || o.reg.value == ZYDIS_REGISTER_EFLAGS ||
        o.reg.value == ZYDIS_REGISTER_FLAGS)
      f.flags_conditional = f.flags_conditional || conditional;
    switch (g.kind) {
      case Kind::kSkip:
        break;
      case Kind::kGpr: {
        const auto bit = static_cast<uint16_t>(1u << g.index);
        // rsp of push/pop/call/ret, rsi/rdi of the string instructions, rcx under rep: they
        // only step; whatever value they step from must be known (an address, a count).
        if (hidden && steps && ((bases & bit) || (counted && g.index == 1))) {
          f.address |= bit;
          break;
        }
        if (read) f.gpr_read |= bit;
        if (write) {
          if (g.whole && !conditional)
            f.gpr_write |= bit;
          else
            f.gpr_merge |= bit;
        }
        break;
      }
      case Kind::kVector: {
        const uint32_t bit = 1u << g.index;
        const bool wide = o.size > 128;
        if (read) {
          f.vector_read |= bit;
          if (wide) f.vector_read_high |= bit;
        }
        if (!write) break;
        if (merge_masked || conditional) {
          f.vector_merge |= bit;
        } else if (vex_or_evex) {
          // Every VEX/EVEX operand a destination keeps bits from is an explicit source
          // (vmovss xmm0, xmm1, xmm2 keeps xmm1's), and the bits above it are zeroed.
          f.vector_write |= bit;
          (wide ? f.vector_write_high : f.vector_zero_high) |= bit;
        } else if (LegacyWritesWholeXmm(insn, ops)) {
          f.vector_write |= bit;  // the bits above xmm stay as they were
        } else {
          // Zydis marks legacy SSE destinations written, not read, even where the instruction
          // keeps some of their bits (movss xmm0, xmm1; movlps; sqrtss; cvtss2sd).
          f.vector_merge |= bit;
        }
        break;
      }
      case Kind::kMask: {
        const auto bit = static_cast<uint8_t>(1u << g.index);
        if (read) f.mask_read |= bit;
        if (write) f.mask_write |= bit;
        break;
      }
      case Kind::kControl:
        // Zydis's actions for these are not to be trusted (fnstcw, which stores the control
        // word, lists the status word as written): whatever touches them reads them too.
        f.control_read = f.control_read || read || write;
        f.control_write = f.control_write || write;
        break;
    }
  }
  // The EVEX writemask Zydis lists among the visible operands is read like any other.
  if (insn.cpu_flags != nullptr) {
    f.flags_read = static_cast<uint16_t>(insn.cpu_flags->tested & kModelledFlags);
    f.flags_undefined = static_cast<uint16_t>(insn.cpu_flags->undefined & kModelledFlags);
    f.flags_computed =
        static_cast<uint16_t>(insn.cpu_flags->modified & kModelledFlags & ~f.flags_undefined);
    f.flags_constant =
        static_cast<uint16_t>((insn.cpu_flags->set_0 | insn.cpu_flags->set_1) & kModelledFlags &
                              ~f.flags_computed & ~f.flags_undefined);
  }
  // A shift or rotate leaves the flags as they were when its masked count is 0, which Zydis
  // marks only for counts in cl (an immediate of 32 on a byte register is masked to 0 too; rcl
  // and rcr reduce the count further, modulo the size plus one).
  switch (mn) {
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL:
    case ZYDIS_MNEMONIC_ROR:
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD: {
      const ZydisDecodedOperand& count = ops[insn.operand_count_visible - 1];
      const uint64_t mask = insn.operand_width == 64 ? 0x3f : 0x1f;
      if (count.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || (count.imm.value.u & mask) == 0)
        f.flags_conditional = true;
      break;
    }
    case ZYDIS_MNEMONIC_RCL:
    case ZYDIS_MNEMONIC_RCR:
      f.flags_conditional = true;
      break;
    default:
      break;
  }
  if (!ConstantFlagsTrusted(mn)) {
    f.flags_computed |= f.flags_constant;
    f.flags_constant = 0;
  }
  f.zero_idiom = decoders::IsDependencyBreakingIdiom(mn) && SameSources(insn, ops);
  f.faults_on_value = mn == ZYDIS_MNEMONIC_DIV || mn == ZYDIS_MNEMONIC_IDIV;
  f.counted_compare = counted && IsCompareString(mn);
  if (mn == ZYDIS_MNEMONIC_LEAVE) {
    f = DataFlow{};
    f.leave = true;
    f.address = 1u << 5;  // rbp: the address of the load
  }
  return f;
}

}  // namespace pathprof::emulator
