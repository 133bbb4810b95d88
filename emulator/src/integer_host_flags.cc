// Shifts and rotates, double shifts, multiplies and divides, bit scans, bit tests and the BMI
// instructions with flags: the integer instructions after which the SDM leaves some flags
// undefined. Operands are read and written here; the operation itself runs on this CPU
// (host_integer.h), so the result and every arithmetic flag are what the target's CPU gives.
//
// Every memory access that can end the window comes before any register or flag changes: a
// window that ends at an instruction must leave the registers as the CPU has them when that
// instruction faults, untouched.
#include <Zydis/Zydis.h>

#include <bit>

#include "host_integer.h"
#include "integer_arithmetic.h"
#include "integer_handlers.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

// shl/shr/sar/rol/ror/rcl/rcr r/m, 1 | cl | imm8.
template <HostShiftOp kOp>
Step Shift(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, count = 1;
  if (!ReadInt(m, d.op[0], size, &a)) return Step::kEnded;
  if (d.operand_count > 1 && !ReadInt(m, d.op[1], 1, &count)) return Step::kEnded;
  uint64_t f = m.s.rflags;
  // The form that differs on some cores: a register rotated by an imm8 (HostShift).
  const bool register_by_immediate = d.op[0].type == OperandType::kRegister &&
                                     d.operand_count > 1 && d.op[1].type == OperandType::kImmediate;
  const uint64_t r =
      HostShift(kOp, a, static_cast<uint8_t>(count), size, register_by_immediate, &f);
  if (!WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// shld (kLeft) / shrd r/m, r, cl | imm8.
template <bool kLeft>
Step DoubleShift(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, b = 0, count = 0;
  if (!ReadInt(m, d.op[0], size, &a) || !ReadInt(m, d.op[1], size, &b) ||
      !ReadInt(m, d.op[2], 1, &count))
    return Step::kEnded;
  uint64_t f = m.s.rflags;
  const uint64_t r = HostDoubleShift(kLeft, a, b, static_cast<uint8_t>(count), size, &f);
  if (!WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// mul (kSigned false) and imul.
template <bool kSigned>
Step Multiply(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.operand_size;
  uint64_t f = m.s.rflags;
  if (kSigned && d.operand_count >= 2) {
    // imul r, r/m (, imm): the product truncated to the destination.
    const Operand& src1 = d.operand_count == 3 ? d.op[1] : d.op[0];
    const Operand& src2 = d.operand_count == 3 ? d.op[2] : d.op[1];
    uint64_t a = 0, b = 0;
    if (!ReadInt(m, src1, size, &a) || !ReadInt(m, src2, size, &b)) return Step::kEnded;
    const uint64_t r = HostTruncatedMultiply(a, b, size, &f);
    if (!WriteInt(m, d.op[0], size, r)) return Step::kEnded;
    SetFlags(m, kArithmeticFlags, f);
    return Step::kNext;
  }
  // mul/imul r/m: rdx:rax = rax * r/m (ax = al * r/m8).
  uint64_t b = 0;
  if (!ReadInt(m, d.op[0], size, &b)) return Step::kEnded;
  const uint64_t a = m.s.gpr[kRax] & SizeMask(size);
  uint64_t lo = 0, hi = 0;
  HostWideMultiply(kSigned, a, b, size, &lo, &hi, &f);
  if (size == 1) {
    WriteGpr(m, RegRef{RegClass::kGpr, kRax, 2, 0}, (hi << 8) | lo);
  } else {
    WriteGpr(m, RegRef{RegClass::kGpr, kRax, static_cast<uint8_t>(size), 0}, lo);
    WriteGpr(m, RegRef{RegClass::kGpr, kRdx, static_cast<uint8_t>(size), 0}, hi);
  }
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// div (kSigned false) and idiv; a zero divisor or a quotient that does not fit raises #DE on
// the CPU: the window ends there (the thread will take SIGFPE), and the host never divides it.
template <bool kSigned>
Step Divide(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.operand_size;
  const unsigned bits = size * 8;
  uint64_t divisor = 0;
  if (!ReadInt(m, d.op[0], size, &divisor)) return Step::kEnded;
  if (divisor == 0) return m.End(EmulationEnd::kFault);
  const uint64_t mask = SizeMask(size);
  const uint64_t lo = size == 1 ? m.s.gpr[kRax] & 0xffff : m.s.gpr[kRax] & mask;
  const uint64_t hi = size == 1 ? 0 : m.s.gpr[kRdx] & mask;
  const unsigned __int128 dividend =
      size == 1 ? lo : (static_cast<unsigned __int128>(hi) << bits) | lo;
  if (!kSigned) {
    if (dividend / divisor > mask) return m.End(EmulationEnd::kFault);
  } else {
    const unsigned shift = 128 - 2 * bits;
    const __int128 sd = static_cast<__int128>(dividend << shift) >> shift;
    const __int128 sv = SignExtend(divisor, size);
    if (size == 8 && sd == static_cast<__int128>(static_cast<unsigned __int128>(1) << 127))
      return m.End(EmulationEnd::kFault);  // -2^127 / -1 does not fit even in 128 bits
    const __int128 q = sd / sv;
    const __int128 limit = static_cast<__int128>(1) << (bits - 1);
    if (q >= limit || q < -limit) return m.End(EmulationEnd::kFault);
  }
  uint64_t q = 0, r = 0, f = m.s.rflags;
  HostDivide(kSigned, lo, hi, divisor, size, &q, &r, &f);
  if (size == 1) {
    WriteGpr(m, RegRef{RegClass::kGpr, kRax, 2, 0}, (r << 8) | q);
  } else {
    WriteGpr(m, RegRef{RegClass::kGpr, kRax, static_cast<uint8_t>(size), 0}, q);
    WriteGpr(m, RegRef{RegClass::kGpr, kRdx, static_cast<uint8_t>(size), 0}, r);
  }
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// bt/bts/btr/btc r/m, r | imm8. A register offset into memory addresses a bit string: the
// operand it names lies whole operands away from the address.
template <HostBitTestOp kOp>
Step BitTest(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  const unsigned bits = size * 8;
  uint64_t offset = 0;
  if (!ReadInt(m, d.op[1], size, &offset)) return Step::kEnded;
  Operand target = d.op[0];
  if (target.type == OperandType::kMemory && d.op[1].type == OperandType::kRegister) {
    const int64_t so = SignExtend(offset, size);
    target.mem.displacement += (so >> std::countr_zero(bits)) * static_cast<int64_t>(size);
  }
  uint64_t v = 0;
  if (!ReadInt(m, target, size, &v)) return Step::kEnded;
  uint64_t f = m.s.rflags;
  const uint64_t r = HostBitTest(kOp, v, offset & (bits - 1), size, &f);
  if (kOp != HostBitTestOp::kBt && !WriteInt(m, target, size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// bsf/bsr/tzcnt/lzcnt/popcnt r, r/m. The destination is always a register; it is written
// whole, as the host left it (a 32-bit bsf of zero does not zero the upper half on AMD).
template <HostBitScanOp kOp>
Step BitScan(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  const Operand& dst = d.op[0];
  if (dst.type != OperandType::kRegister || dst.reg.cls != RegClass::kGpr || dst.reg.shift != 0)
    return m.End(EmulationEnd::kUnmodelled);
  uint64_t src = 0;
  if (!ReadInt(m, d.op[1], size, &src)) return Step::kEnded;
  uint64_t f = m.s.rflags;
  m.s.gpr[dst.reg.index] = HostBitScan(kOp, src, m.s.gpr[dst.reg.index], size, &f);
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// andn, bzhi, bextr r, r, r/m (bzhi and bextr: r, r/m, r); blsr, blsi, blsmsk r, r/m.
template <HostBmiOp kOp>
Step Bmi(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[1], size, &a)) return Step::kEnded;
  if (d.operand_count > 2 && !ReadInt(m, d.op[2], size, &b)) return Step::kEnded;
  uint64_t f = m.s.rflags;
  const uint64_t r = HostBmi(kOp, a, b, size, &f);
  if (!WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

}  // namespace

void AddHostFlaggedOps(IntegerHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_SHL}, Shift<HostShiftOp::kShl>);
  t.Add({ZYDIS_MNEMONIC_SHR}, Shift<HostShiftOp::kShr>);
  t.Add({ZYDIS_MNEMONIC_SAR}, Shift<HostShiftOp::kSar>);
  t.Add({ZYDIS_MNEMONIC_ROL}, Shift<HostShiftOp::kRol>);
  t.Add({ZYDIS_MNEMONIC_ROR}, Shift<HostShiftOp::kRor>);
  t.Add({ZYDIS_MNEMONIC_RCL}, Shift<HostShiftOp::kRcl>);
  t.Add({ZYDIS_MNEMONIC_RCR}, Shift<HostShiftOp::kRcr>);
  t.Add({ZYDIS_MNEMONIC_SHLD}, DoubleShift<true>);
  t.Add({ZYDIS_MNEMONIC_SHRD}, DoubleShift<false>);
  t.Add({ZYDIS_MNEMONIC_MUL}, Multiply<false>);
  t.Add({ZYDIS_MNEMONIC_IMUL}, Multiply<true>);
  t.Add({ZYDIS_MNEMONIC_DIV}, Divide<false>);
  t.Add({ZYDIS_MNEMONIC_IDIV}, Divide<true>);
  t.Add({ZYDIS_MNEMONIC_BT}, BitTest<HostBitTestOp::kBt>);
  t.Add({ZYDIS_MNEMONIC_BTS}, BitTest<HostBitTestOp::kBts>);
  t.Add({ZYDIS_MNEMONIC_BTR}, BitTest<HostBitTestOp::kBtr>);
  t.Add({ZYDIS_MNEMONIC_BTC}, BitTest<HostBitTestOp::kBtc>);
  t.Add({ZYDIS_MNEMONIC_BSF}, BitScan<HostBitScanOp::kBsf>);
  t.Add({ZYDIS_MNEMONIC_BSR}, BitScan<HostBitScanOp::kBsr>);
  t.Add({ZYDIS_MNEMONIC_TZCNT}, BitScan<HostBitScanOp::kTzcnt>);
  t.Add({ZYDIS_MNEMONIC_LZCNT}, BitScan<HostBitScanOp::kLzcnt>);
  t.Add({ZYDIS_MNEMONIC_POPCNT}, BitScan<HostBitScanOp::kPopcnt>);
  t.Add({ZYDIS_MNEMONIC_ANDN}, Bmi<HostBmiOp::kAndn>);
  t.Add({ZYDIS_MNEMONIC_BZHI}, Bmi<HostBmiOp::kBzhi>);
  t.Add({ZYDIS_MNEMONIC_BEXTR}, Bmi<HostBmiOp::kBextr>);
  t.Add({ZYDIS_MNEMONIC_BLSR}, Bmi<HostBmiOp::kBlsr>);
  t.Add({ZYDIS_MNEMONIC_BLSI}, Bmi<HostBmiOp::kBlsi>);
  t.Add({ZYDIS_MNEMONIC_BLSMSK}, Bmi<HostBmiOp::kBlsmsk>);
}

}  // namespace pathprof::emulator
