// Integer instructions: the dispatch through the families' one table (integer_handlers.h), and
// the data family: moves, arithmetic and logic with their flags, the flag instructions. The
// other families are in integer_control.cc (stack, jumps, conditions), integer_strings.cc and
// integer_host_flags.cc (shifts, multiplies, divides, bit scans and tests, whose flags the SDM
// leaves partly undefined, run on this CPU). Where a window ends at an instruction, the
// instruction leaves no trace: memory accesses that can fail come before any register or flag
// changes.
#include <Zydis/Zydis.h>

#include "host_integer.h"
#include "integer_arithmetic.h"
#include "integer_handlers.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

ZydisMnemonic MnemonicOf(const DecodedInstruction& d) {
  return static_cast<ZydisMnemonic>(d.mnemonic);
}

// nop, endbr64, pause, the fences and prefetches: nothing a window can see.
Step NoEffect(Machine&, const DecodedInstruction&) {
  return Step::kNext;
}

// movnti, and mov between general registers and memory or immediates.
Step MoveInteger(Machine& m, const DecodedInstruction& d) {
  uint64_t v = 0;
  if (!ReadInt(m, d.op[1], d.op[0].size, &v)) return Step::kEnded;
  return WriteInt(m, d.op[0], d.op[0].size, v) ? Step::kNext : Step::kEnded;
}

// mov to or from a segment, control or debug register is not this family's.
Step Move(Machine& m, const DecodedInstruction& d) {
  if (d.op[0].type == OperandType::kRegister && d.op[0].reg.cls != RegClass::kGpr)
    return Step::kNotMine;
  if (d.op[1].type == OperandType::kRegister && d.op[1].reg.cls != RegClass::kGpr)
    return Step::kNotMine;
  return MoveInteger(m, d);
}

// movzx (kSigned false), movsx and movsxd.
template <bool kSigned>
Step MoveExtended(Machine& m, const DecodedInstruction& d) {
  uint64_t v = 0;
  const unsigned from = d.op[1].size;
  if (!ReadInt(m, d.op[1], from, &v)) return Step::kEnded;
  if (kSigned) v = static_cast<uint64_t>(SignExtend(v, from));
  return WriteInt(m, d.op[0], d.op[0].size, v & SizeMask(d.op[0].size)) ? Step::kNext
                                                                        : Step::kEnded;
}

Step LoadEffectiveAddress(Machine& m, const DecodedInstruction& d) {
  MemRef mem = d.op[1].mem;
  mem.segment = 0;
  return WriteInt(m, d.op[0], d.op[0].size, EffectiveAddress(m, mem) & SizeMask(d.op[0].size))
             ? Step::kNext
             : Step::kEnded;
}

Step Exchange(Machine& m, const DecodedInstruction& d) {
  uint64_t a = 0, b = 0;
  const unsigned s = d.op[0].size;
  if (!ReadInt(m, d.op[0], s, &a) || !ReadInt(m, d.op[1], s, &b)) return Step::kEnded;
  // The memory operand (if any) first: a store that faults leaves the register as it was.
  const bool memory_first = d.op[1].type == OperandType::kMemory;
  const Operand& first = memory_first ? d.op[1] : d.op[0];
  const Operand& second = memory_first ? d.op[0] : d.op[1];
  if (!WriteInt(m, first, s, memory_first ? a : b) || !WriteInt(m, second, s, memory_first ? b : a))
    return Step::kEnded;
  return Step::kNext;
}

Step ByteSwap(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.operand_size;
  uint64_t v = 0;
  if (!ReadInt(m, d.op[0], size, &v)) return Step::kEnded;
  v = size == 8 ? __builtin_bswap64(v) : __builtin_bswap32(static_cast<uint32_t>(v));
  return WriteInt(m, d.op[0], size, v) ? Step::kNext : Step::kEnded;
}

// A load or a store with the bytes reversed (2, 4 or 8 of them); no flags. glibc's memcmp and
// strstr variants for AVX2 and EVEX use it.
Step MoveByteSwapped(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t v = 0;
  if (!ReadInt(m, d.op[1], s, &v)) return Step::kEnded;
  v = s == 8   ? __builtin_bswap64(v)
      : s == 4 ? __builtin_bswap32(static_cast<uint32_t>(v))
               : __builtin_bswap16(static_cast<uint16_t>(v));
  return WriteInt(m, d.op[0], s, v) ? Step::kNext : Step::kEnded;
}

// Binary ALU operations of the form dst = dst OP src.
Step Alu(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[0], size, &a) || !ReadInt(m, d.op[1], size, &b)) return Step::kEnded;
  uint64_t r = 0, f = 0;
  const uint64_t cf = (m.s.rflags & kCF) ? 1 : 0;
  bool write = true;
  switch (MnemonicOf(d)) {
    case ZYDIS_MNEMONIC_ADD:
      r = Add(a, b, 0, size, &f);
      break;
    case ZYDIS_MNEMONIC_ADC:
      r = Add(a, b, cf, size, &f);
      break;
    case ZYDIS_MNEMONIC_SUB:
      r = Sub(a, b, 0, size, &f);
      break;
    case ZYDIS_MNEMONIC_SBB:
      r = Sub(a, b, cf, size, &f);
      break;
    case ZYDIS_MNEMONIC_CMP:
      r = Sub(a, b, 0, size, &f);
      write = false;
      break;
    // Logic: CF = OF = 0; AF is undefined and cleared, as Intel and AMD cores do.
    case ZYDIS_MNEMONIC_AND:
      r = a & b;
      f = SzpFlags(r, size);
      break;
    case ZYDIS_MNEMONIC_TEST:
      r = a & b;
      f = SzpFlags(r, size);
      write = false;
      break;
    case ZYDIS_MNEMONIC_OR:
      r = a | b;
      f = SzpFlags(r, size);
      break;
    case ZYDIS_MNEMONIC_XOR:
      r = a ^ b;
      f = SzpFlags(r, size);
      break;
    default:
      return Step::kNotMine;
  }
  // A store that faults ends the window with the flags untouched, as the CPU leaves them.
  if (write && !WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// inc (kIncrement) and dec: CF as it was.
template <bool kIncrement>
Step IncrementOrDecrement(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t a = 0, f = 0, r = 0;
  if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
  r = kIncrement ? Add(a, 1, 0, s, &f) : Sub(a, 1, 0, s, &f);
  if (!WriteInt(m, d.op[0], s, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags & ~kCF, f);
  return Step::kNext;
}

Step Negate(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t a = 0, f = 0;
  if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
  const uint64_t r = Sub(0, a, 0, s, &f);
  if (!WriteInt(m, d.op[0], s, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

Step Not(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t a = 0;
  if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
  return WriteInt(m, d.op[0], s, ~a & SizeMask(s)) ? Step::kNext : Step::kEnded;
}

// cbw, cwde, cdqe: the accumulator's lower half sign-extended into it.
Step SignExtendAccumulator(Machine& m, const DecodedInstruction& d) {
  const unsigned to = d.operand_size, from = to / 2;
  const uint64_t v = static_cast<uint64_t>(SignExtend(m.s.gpr[kRax] & SizeMask(from), from));
  WriteGpr(m, RegRef{RegClass::kGpr, kRax, static_cast<uint8_t>(to), 0}, v);
  return Step::kNext;
}

// cwd, cdq, cqo: rdx filled with the accumulator's sign.
Step SignFillRdx(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.operand_size;
  const bool negative = m.s.gpr[kRax] & SignBit(size);
  WriteGpr(m, RegRef{RegClass::kGpr, kRdx, static_cast<uint8_t>(size), 0}, negative ? ~0ull : 0);
  return Step::kNext;
}

// BMI2 shifts and rotate: three operands, no flags.
Step ThreeOperandShift(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  const unsigned bits = size * 8;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[1], size, &a) || !ReadInt(m, d.op[2], size, &b)) return Step::kEnded;
  const uint64_t mask = SizeMask(size);
  const unsigned c = static_cast<unsigned>(b & (bits - 1));
  uint64_t r = 0;
  switch (MnemonicOf(d)) {
    case ZYDIS_MNEMONIC_SHLX:
      r = (a << c) & mask;
      break;
    case ZYDIS_MNEMONIC_SHRX:
      r = a >> c;
      break;
    case ZYDIS_MNEMONIC_SARX:
      r = static_cast<uint64_t>(SignExtend(a, size) >> c) & mask;
      break;
    case ZYDIS_MNEMONIC_RORX: {
      const unsigned k = static_cast<unsigned>(b % bits);
      r = k == 0 ? a : ((a >> k) | (a << (bits - k))) & mask;
      break;
    }
    default:
      return Step::kNotMine;
  }
  return WriteInt(m, d.op[0], size, r) ? Step::kNext : Step::kEnded;
}

Step CompareExchange(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t dst = 0, src = 0, f = 0;
  if (!ReadInt(m, d.op[0], s, &dst) || !ReadInt(m, d.op[1], s, &src)) return Step::kEnded;
  const RegRef acc{RegClass::kGpr, kRax, static_cast<uint8_t>(s), 0};
  const Operand& dst_op = d.op[0];
  if (dst_op.type == OperandType::kRegister && dst_op.reg.shift == 0) {
    // Whether an unequal compare writes a 32-bit destination register back (zeroing its
    // upper half) differs between vendors: it runs on this CPU, on whole registers.
    uint64_t a = m.s.gpr[kRax], whole = m.s.gpr[dst_op.reg.index];
    f = m.s.rflags;
    HostCompareExchange(&a, &whole, src, s, &f);
    m.s.gpr[kRax] = a;
    if (dst_op.reg.index != kRax || (f & kZF)) m.s.gpr[dst_op.reg.index] = whole;
    SetFlags(m, kArithmeticFlags, f);
    return Step::kNext;
  }
  Sub(ReadGpr(m, acc), dst, 0, s, &f);
  // Equal: the source goes to the destination. Not equal: the CPU writes the old value back
  // to a memory destination (no change, but a page it may not write faults either way),
  // and loads it into the accumulator.
  if (!WriteInt(m, dst_op, s, (f & kZF) ? src : dst)) return Step::kEnded;
  if (!(f & kZF)) WriteGpr(m, acc, dst);
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

Step ExchangeAdd(Machine& m, const DecodedInstruction& d) {
  const unsigned s = d.op[0].size;
  uint64_t dst = 0, src = 0, f = 0;
  if (!ReadInt(m, d.op[0], s, &dst) || !ReadInt(m, d.op[1], s, &src)) return Step::kEnded;
  const uint64_t sum = Add(dst, src, 0, s, &f);
  // The source register gets the old value, then the destination the sum (the sum wins in
  // xadd r, r of one register); a memory destination goes first, so that a store that
  // faults leaves the register as it was.
  if (d.op[0].type == OperandType::kMemory) {
    if (!WriteInt(m, d.op[0], s, sum) || !WriteInt(m, d.op[1], s, dst)) return Step::kEnded;
  } else {
    WriteGpr(m, d.op[1].reg, dst);
    WriteGpr(m, d.op[0].reg, sum);
  }
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// clc, stc, cld, std: the flag `kFlag` set to `kValue`.
template <uint64_t kFlag, bool kValue>
Step SetFlag(Machine& m, const DecodedInstruction&) {
  SetFlags(m, kFlag, kValue ? kFlag : 0);
  return Step::kNext;
}

Step ComplementCarry(Machine& m, const DecodedInstruction&) {
  m.s.rflags ^= kCF;
  return Step::kNext;
}

Step LoadFlagsIntoAh(Machine& m, const DecodedInstruction&) {
  WriteGpr(m, RegRef{RegClass::kGpr, kRax, 1, 8}, (m.s.rflags & 0xd5) | 2);
  return Step::kNext;
}

Step StoreAhIntoFlags(Machine& m, const DecodedInstruction&) {
  SetFlags(m, kCF | kPF | kAF | kZF | kSF, (m.s.gpr[kRax] >> 8) & 0xd5);
  return Step::kNext;
}

const IntegerHandlers& Handlers() {
  static const IntegerHandlers handlers = [] {
    IntegerHandlers t;
    AddIntegerDataOps(t);
    AddIntegerControlOps(t);
    AddStringOps(t);
    AddHostFlaggedOps(t);
    AddBitManipulationOps(t);
    return t;
  }();
  return handlers;
}

}  // namespace

void AddIntegerDataOps(IntegerHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_NOP, ZYDIS_MNEMONIC_ENDBR64, ZYDIS_MNEMONIC_PAUSE, ZYDIS_MNEMONIC_LFENCE,
         ZYDIS_MNEMONIC_SFENCE, ZYDIS_MNEMONIC_MFENCE, ZYDIS_MNEMONIC_PREFETCHT0,
         ZYDIS_MNEMONIC_PREFETCHT1, ZYDIS_MNEMONIC_PREFETCHT2, ZYDIS_MNEMONIC_PREFETCHNTA,
         ZYDIS_MNEMONIC_PREFETCHW},
        NoEffect);
  t.Add({ZYDIS_MNEMONIC_MOV}, Move);
  t.Add({ZYDIS_MNEMONIC_MOVNTI}, MoveInteger);
  t.Add({ZYDIS_MNEMONIC_MOVZX}, MoveExtended<false>);
  t.Add({ZYDIS_MNEMONIC_MOVSX, ZYDIS_MNEMONIC_MOVSXD}, MoveExtended<true>);
  t.Add({ZYDIS_MNEMONIC_LEA}, LoadEffectiveAddress);
  t.Add({ZYDIS_MNEMONIC_XCHG}, Exchange);
  t.Add({ZYDIS_MNEMONIC_BSWAP}, ByteSwap);
  t.Add({ZYDIS_MNEMONIC_MOVBE}, MoveByteSwapped);
  t.Add({ZYDIS_MNEMONIC_ADD, ZYDIS_MNEMONIC_ADC, ZYDIS_MNEMONIC_SUB, ZYDIS_MNEMONIC_SBB,
         ZYDIS_MNEMONIC_CMP, ZYDIS_MNEMONIC_AND, ZYDIS_MNEMONIC_TEST, ZYDIS_MNEMONIC_OR,
         ZYDIS_MNEMONIC_XOR},
        Alu);
  t.Add({ZYDIS_MNEMONIC_INC}, IncrementOrDecrement<true>);
  t.Add({ZYDIS_MNEMONIC_DEC}, IncrementOrDecrement<false>);
  t.Add({ZYDIS_MNEMONIC_NEG}, Negate);
  t.Add({ZYDIS_MNEMONIC_NOT}, Not);
  t.Add({ZYDIS_MNEMONIC_CBW, ZYDIS_MNEMONIC_CWDE, ZYDIS_MNEMONIC_CDQE}, SignExtendAccumulator);
  t.Add({ZYDIS_MNEMONIC_CWD, ZYDIS_MNEMONIC_CDQ, ZYDIS_MNEMONIC_CQO}, SignFillRdx);
  t.Add({ZYDIS_MNEMONIC_SHLX, ZYDIS_MNEMONIC_SHRX, ZYDIS_MNEMONIC_SARX, ZYDIS_MNEMONIC_RORX},
        ThreeOperandShift);
  t.Add({ZYDIS_MNEMONIC_CMPXCHG}, CompareExchange);
  t.Add({ZYDIS_MNEMONIC_XADD}, ExchangeAdd);
  t.Add({ZYDIS_MNEMONIC_CLC}, SetFlag<kCF, false>);
  t.Add({ZYDIS_MNEMONIC_STC}, SetFlag<kCF, true>);
  t.Add({ZYDIS_MNEMONIC_CMC}, ComplementCarry);
  t.Add({ZYDIS_MNEMONIC_CLD}, SetFlag<kDF, false>);
  t.Add({ZYDIS_MNEMONIC_STD}, SetFlag<kDF, true>);
  t.Add({ZYDIS_MNEMONIC_LAHF}, LoadFlagsIntoAh);
  t.Add({ZYDIS_MNEMONIC_SAHF}, StoreAhIntoFlags);
}

Step ExecuteInteger(Machine& m, const DecodedInstruction& d) {
  const InstructionHandler handler = Handlers().Find(d.mnemonic);
  return handler != nullptr ? handler(m, d) : Step::kNotMine;
}

}  // namespace pathprof::emulator
