#include "decoded_instruction.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>

#include "integer_arithmetic.h"

namespace pathprof::emulator {
namespace {

const ZydisDecoder& Decoder() {
  static const ZydisDecoder decoder = [] {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    return d;
  }();
  return decoder;
}

RegRef Resolve(ZydisRegister reg) {
  RegRef r;
  if (reg == ZYDIS_REGISTER_NONE) return r;
  if (reg == ZYDIS_REGISTER_RIP) {
    r.cls = RegClass::kRip;
    r.size = 8;
    return r;
  }
  const ZydisRegisterClass cls = ZydisRegisterGetClass(reg);
  switch (cls) {
    case ZYDIS_REGCLASS_GPR8:
      r.cls = RegClass::kGpr;
      r.size = 1;
      if (reg >= ZYDIS_REGISTER_AH && reg <= ZYDIS_REGISTER_BH) {
        r.index = static_cast<uint8_t>(reg - ZYDIS_REGISTER_AH);  // ah ch dh bh: rax rcx rdx rbx
        r.shift = 8;
        return r;
      }
      break;
    case ZYDIS_REGCLASS_GPR16:
      r.cls = RegClass::kGpr;
      r.size = 2;
      break;
    case ZYDIS_REGCLASS_GPR32:
      r.cls = RegClass::kGpr;
      r.size = 4;
      break;
    case ZYDIS_REGCLASS_GPR64:
      r.cls = RegClass::kGpr;
      r.size = 8;
      break;
    case ZYDIS_REGCLASS_XMM:
      r.cls = RegClass::kVector;
      r.size = 16;
      r.index = static_cast<uint8_t>(ZydisRegisterGetId(reg));
      return r;
    case ZYDIS_REGCLASS_YMM:
      r.cls = RegClass::kVector;
      r.size = 32;
      r.index = static_cast<uint8_t>(ZydisRegisterGetId(reg));
      return r;
    case ZYDIS_REGCLASS_ZMM:
      r.cls = RegClass::kVector;
      r.size = 64;
      r.index = static_cast<uint8_t>(ZydisRegisterGetId(reg));
      return r;
    case ZYDIS_REGCLASS_MASK:
      r.cls = RegClass::kMask;
      r.size = 8;
      r.index = static_cast<uint8_t>(ZydisRegisterGetId(reg));
      return r;
    default:
      r.cls = RegClass::kOther;  // segment, x87, control, flags...: unmodelled where used
      return r;
  }
  const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
  r.index = static_cast<uint8_t>(ZydisRegisterGetId(full));
  return r;
}

bool PlainInteger(const Operand& o) {
  switch (o.type) {
    case OperandType::kRegister:
      return o.reg.cls == RegClass::kGpr;
    case OperandType::kMemory:
      return o.mem.index.cls != RegClass::kVector;
    case OperandType::kImmediate:
      return true;
    default:
      return false;
  }
}

// Which FastOp `d` is, or kNone; the checks mirror what integer_ops.cc requires of each.
FastOp ClassifyFast(const DecodedInstruction& d) {
  if (d.is_vector || d.rep || d.repne || d.rounding) return FastOp::kNone;
  if (d.branch.is_branch && d.branch.kind == BranchKind::kFarTransfer) return FastOp::kNone;
  for (uint8_t i = 0; i < d.operand_count; ++i)
    if (!PlainInteger(d.op[i])) return FastOp::kNone;
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const bool two = d.operand_count == 2;
  const bool dst_ok = d.operand_count >= 1 && d.op[0].type != OperandType::kImmediate;
  switch (mn) {
    case ZYDIS_MNEMONIC_NOP:
    case ZYDIS_MNEMONIC_ENDBR64:
      return FastOp::kNop;
    case ZYDIS_MNEMONIC_MOV:
      return two && dst_ok ? FastOp::kMov : FastOp::kNone;
    case ZYDIS_MNEMONIC_MOVZX:
      return two && dst_ok ? FastOp::kMovzx : FastOp::kNone;
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
      return two && dst_ok ? FastOp::kMovsx : FastOp::kNone;
    case ZYDIS_MNEMONIC_LEA:
      return two && d.op[1].type == OperandType::kMemory ? FastOp::kLea : FastOp::kNone;
    case ZYDIS_MNEMONIC_ADD:
      return two && dst_ok ? FastOp::kAdd : FastOp::kNone;
    case ZYDIS_MNEMONIC_SUB:
      return two && dst_ok ? FastOp::kSub : FastOp::kNone;
    case ZYDIS_MNEMONIC_CMP:
      return two && dst_ok ? FastOp::kCmp : FastOp::kNone;
    case ZYDIS_MNEMONIC_AND:
      return two && dst_ok ? FastOp::kAnd : FastOp::kNone;
    case ZYDIS_MNEMONIC_OR:
      return two && dst_ok ? FastOp::kOr : FastOp::kNone;
    case ZYDIS_MNEMONIC_XOR:
      return two && dst_ok ? FastOp::kXor : FastOp::kNone;
    case ZYDIS_MNEMONIC_TEST:
      return two && dst_ok ? FastOp::kTest : FastOp::kNone;
    case ZYDIS_MNEMONIC_INC:
      return dst_ok ? FastOp::kInc : FastOp::kNone;
    case ZYDIS_MNEMONIC_DEC:
      return dst_ok ? FastOp::kDec : FastOp::kNone;
    case ZYDIS_MNEMONIC_PUSH:
      return d.operand_count == 1 ? FastOp::kPush : FastOp::kNone;
    case ZYDIS_MNEMONIC_POP:
      return d.operand_count == 1 && dst_ok ? FastOp::kPop : FastOp::kNone;
    case ZYDIS_MNEMONIC_JMP:
      return d.branch.is_branch && d.operand_count == 1 ? FastOp::kJmp : FastOp::kNone;
    case ZYDIS_MNEMONIC_CALL:
      return d.branch.is_branch && d.operand_count == 1 ? FastOp::kCall : FastOp::kNone;
    case ZYDIS_MNEMONIC_RET:
      return d.operand_count == 0 ? FastOp::kRet : FastOp::kNone;
    default:
      break;
  }
  if (d.branch.is_branch && d.branch.kind == BranchKind::kConditional &&
      d.branch.has_direct_target && ConditionOf(mn) >= 0)
    return FastOp::kJcc;
  return FastOp::kNone;
}

}  // namespace

bool DecodeInstruction(const uint8_t* bytes, size_t size, uint64_t address,
                       DecodedInstruction* out) {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&Decoder(), bytes, size, &insn, ops))) return false;
  DecodedInstruction d;
  d.mnemonic = static_cast<uint16_t>(insn.mnemonic);
  d.length = insn.length;
  d.operand_size = static_cast<uint8_t>(insn.operand_width / 8);
  d.rep = (insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE)) != 0;
  d.repne = (insn.attributes & ZYDIS_ATTRIB_HAS_REPNE) != 0;
  d.vex_or_evex = (insn.attributes & (ZYDIS_ATTRIB_HAS_VEX | ZYDIS_ATTRIB_HAS_EVEX)) != 0;
  d.vector_length = static_cast<uint8_t>(insn.avx.vector_length / 8);
  if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX) {
    const ZydisMaskMode mode = insn.avx.mask.mode;
    if (mode == ZYDIS_MASK_MODE_MERGING || mode == ZYDIS_MASK_MODE_ZEROING ||
        mode == ZYDIS_MASK_MODE_CONTROL || mode == ZYDIS_MASK_MODE_CONTROL_ZEROING) {
      d.mask_register = static_cast<uint8_t>(ZydisRegisterGetId(insn.avx.mask.reg));
      d.zeroing = mode == ZYDIS_MASK_MODE_ZEROING || mode == ZYDIS_MASK_MODE_CONTROL_ZEROING;
      d.mask_control = mode == ZYDIS_MASK_MODE_CONTROL || mode == ZYDIS_MASK_MODE_CONTROL_ZEROING;
    }
    if (insn.avx.rounding.mode != ZYDIS_ROUNDING_MODE_INVALID || insn.avx.has_sae) d.rounding = 1;
  } else if (insn.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY &&
             insn.encoding != ZYDIS_INSTRUCTION_ENCODING_VEX) {
    d.rounding = 1;  // 3DNow!, XOP, MVEX: never modelled
  }
  // Zydis lists an EVEX instruction's writemask as operand 1, {k0} included; it is kept in
  // mask_register instead, so that EVEX operands line up with the VEX form's and a fifth
  // operand (vpternlogd's imm8) still fits.
  d.operand_count = 0;
  for (uint8_t i = 0; i < insn.operand_count_visible && d.operand_count < d.op.size(); ++i) {
    const ZydisDecodedOperand& z = ops[i];
    if (z.encoding == ZYDIS_OPERAND_ENCODING_MASK) continue;
    Operand& o = d.op[d.operand_count++];
    o.size = static_cast<uint8_t>(z.size / 8);
    o.element_size = static_cast<uint8_t>(z.element_size / 8);
    switch (z.type) {
      case ZYDIS_OPERAND_TYPE_REGISTER:
        o.type = OperandType::kRegister;
        o.reg = Resolve(z.reg.value);
        if (o.reg.cls == RegClass::kVector || o.reg.cls == RegClass::kMask) d.is_vector = true;
        break;
      case ZYDIS_OPERAND_TYPE_MEMORY:
        o.type = OperandType::kMemory;
        o.mem.base = Resolve(z.mem.base);
        o.mem.index = Resolve(z.mem.index);
        o.mem.scale = z.mem.scale;
        o.mem.displacement = z.mem.disp.has_displacement ? z.mem.disp.value : 0;
        o.mem.segment = z.mem.segment == ZYDIS_REGISTER_FS   ? 1
                        : z.mem.segment == ZYDIS_REGISTER_GS ? 2
                                                             : 0;
        o.mem.address_size = static_cast<uint8_t>(insn.address_width / 8);
        // EVEX {1toN} only: Zydis also gives a broadcast mode to instructions that always
        // broadcast (vbroadcasti128, vbroadcastss), whose operand is plain memory.
        o.broadcast = z.mem.type == ZYDIS_MEMOP_TYPE_MEM &&
                      insn.avx.broadcast.mode != ZYDIS_BROADCAST_MODE_INVALID &&
                      !insn.avx.broadcast.is_static;
        if (z.mem.type == ZYDIS_MEMOP_TYPE_VSIB || z.mem.type == ZYDIS_MEMOP_TYPE_MIB)
          d.rounding = 1;  // gathers, scatters, MPX: unmodelled
        break;
      case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        o.type = OperandType::kImmediate;
        o.imm = z.imm.is_relative ? address + insn.length + static_cast<uint64_t>(z.imm.value.s)
                                  : z.imm.value.u;
        break;
      case ZYDIS_OPERAND_TYPE_POINTER:
        o.type = OperandType::kPointer;
        break;
      default:
        break;
    }
  }
  if (d.vector_length != 0) d.is_vector = true;
  if (!decoders::DecodeX86Fast(bytes, size, address, &d.branch)) return false;
  std::memcpy(d.bytes.data(), bytes, std::min<size_t>(d.length, d.bytes.size()));
  d.atomic = (insn.attributes & ZYDIS_ATTRIB_HAS_LOCK) != 0 ||
             (insn.mnemonic == ZYDIS_MNEMONIC_XCHG &&
              (d.op[0].type == OperandType::kMemory || d.op[1].type == OperandType::kMemory));
  d.flow = SummariseDataFlow(insn, ops);
  d.fast = ClassifyFast(d);
  if (d.fast == FastOp::kJcc)
    d.condition = static_cast<uint8_t>(ConditionOf(static_cast<ZydisMnemonic>(d.mnemonic)));
  *out = d;
  return true;
}

}  // namespace pathprof::emulator
