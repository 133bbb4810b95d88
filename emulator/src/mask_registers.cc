// AVX-512 opmask instructions on k0-k7: kmov, the bitwise k-operations, kortest/ktest (which
// set the flags glibc branches on), kshift, kunpck and kadd. A b/w/d/q instruction works on the
// low 8/16/32/64 bits and zeroes the rest of the destination.
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

// kmov: between opmasks, memory and general registers (zero-extended into r32/r64).
template <unsigned kBits>
Step Move(Machine& m, const DecodedInstruction& d) {
  const Operand& dst = d.op[0];
  const Operand& src = d.op[1];
  uint64_t v = 0;
  if (IsMaskRegister(src)) {
    v = m.s.k[src.reg.index];
  } else if (!ReadInt(m, src, kBits / 8, &v)) {
    return Step::kEnded;
  }
  v &= LowBits(kBits);
  if (IsMaskRegister(dst)) {
    WriteMaskRegister(m, dst, v);
    return Step::kNext;
  }
  const unsigned size = dst.type == OperandType::kRegister ? dst.size : kBits / 8;
  return WriteInt(m, dst, size, v) ? Step::kNext : Step::kEnded;
}

enum class MaskOp { kAnd, kAndNot, kOr, kXor, kXnor, kAdd, kNot };

template <unsigned kBits, MaskOp kOp>
Step Logic(Machine& m, const DecodedInstruction& d) {
  const uint64_t a = m.s.k[d.op[1].reg.index];
  const uint64_t b = kOp == MaskOp::kNot ? 0 : m.s.k[d.op[2].reg.index];
  uint64_t r = 0;
  switch (kOp) {
    case MaskOp::kAnd:
      r = a & b;
      break;
    case MaskOp::kAndNot:
      r = ~a & b;
      break;
    case MaskOp::kOr:
      r = a | b;
      break;
    case MaskOp::kXor:
      r = a ^ b;
      break;
    case MaskOp::kXnor:
      r = ~(a ^ b);
      break;
    case MaskOp::kAdd:
      r = a + b;
      break;
    case MaskOp::kNot:
      r = ~a;
      break;
  }
  WriteMaskRegister(m, d.op[0], r & LowBits(kBits));
  return Step::kNext;
}

// kortest: ZF = (a | b) == 0, CF = (a | b) all ones; ktest: ZF = (a & b) == 0,
// CF = (~a & b) == 0. OF, SF, AF, PF are cleared.
template <unsigned kBits, bool kOrTest>
Step TestFlags(Machine& m, const DecodedInstruction& d) {
  const uint64_t all = LowBits(kBits);
  const uint64_t a = m.s.k[d.op[0].reg.index] & all;
  const uint64_t b = m.s.k[d.op[1].reg.index] & all;
  uint64_t f = 0;
  if (kOrTest) {
    if ((a | b) == 0) f |= kZF;
    if ((a | b) == all) f |= kCF;
  } else {
    if ((a & b) == 0) f |= kZF;
    if ((~a & b & all) == 0) f |= kCF;
  }
  SetArithmeticFlags(m, f);
  return Step::kNext;
}

// kshiftl/kshiftr k1, k2, imm8: a count past the width clears the destination.
template <unsigned kBits, bool kLeft>
Step Shift(Machine& m, const DecodedInstruction& d) {
  const uint64_t a = m.s.k[d.op[1].reg.index] & LowBits(kBits);
  const uint64_t count = d.op[2].imm & 0xff;
  uint64_t r = 0;
  if (count < kBits) r = (kLeft ? a << count : a >> count) & LowBits(kBits);
  WriteMaskRegister(m, d.op[0], r);
  return Step::kNext;
}

// kunpckbw/wd/dq k1, k2, k3: k1 = k2's low half above k3's low half.
template <unsigned kHalf>
Step Unpack(Machine& m, const DecodedInstruction& d) {
  const uint64_t high = m.s.k[d.op[1].reg.index] & LowBits(kHalf);
  const uint64_t low = m.s.k[d.op[2].reg.index] & LowBits(kHalf);
  WriteMaskRegister(m, d.op[0], (high << kHalf) | low);
  return Step::kNext;
}

}  // namespace

void AddMaskRegisterOps(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_KMOVB}, Move<8>);
  t.Add({ZYDIS_MNEMONIC_KMOVW}, Move<16>);
  t.Add({ZYDIS_MNEMONIC_KMOVD}, Move<32>);
  t.Add({ZYDIS_MNEMONIC_KMOVQ}, Move<64>);

  t.Add({ZYDIS_MNEMONIC_KANDB}, Logic<8, MaskOp::kAnd>);
  t.Add({ZYDIS_MNEMONIC_KANDW}, Logic<16, MaskOp::kAnd>);
  t.Add({ZYDIS_MNEMONIC_KANDD}, Logic<32, MaskOp::kAnd>);
  t.Add({ZYDIS_MNEMONIC_KANDQ}, Logic<64, MaskOp::kAnd>);
  t.Add({ZYDIS_MNEMONIC_KANDNB}, Logic<8, MaskOp::kAndNot>);
  t.Add({ZYDIS_MNEMONIC_KANDNW}, Logic<16, MaskOp::kAndNot>);
  t.Add({ZYDIS_MNEMONIC_KANDND}, Logic<32, MaskOp::kAndNot>);
  t.Add({ZYDIS_MNEMONIC_KANDNQ}, Logic<64, MaskOp::kAndNot>);
  t.Add({ZYDIS_MNEMONIC_KORB}, Logic<8, MaskOp::kOr>);
  t.Add({ZYDIS_MNEMONIC_KORW}, Logic<16, MaskOp::kOr>);
  t.Add({ZYDIS_MNEMONIC_KORD}, Logic<32, MaskOp::kOr>);
  t.Add({ZYDIS_MNEMONIC_KORQ}, Logic<64, MaskOp::kOr>);
  t.Add({ZYDIS_MNEMONIC_KXORB}, Logic<8, MaskOp::kXor>);
  t.Add({ZYDIS_MNEMONIC_KXORW}, Logic<16, MaskOp::kXor>);
  t.Add({ZYDIS_MNEMONIC_KXORD}, Logic<32, MaskOp::kXor>);
  t.Add({ZYDIS_MNEMONIC_KXORQ}, Logic<64, MaskOp::kXor>);
  t.Add({ZYDIS_MNEMONIC_KXNORB}, Logic<8, MaskOp::kXnor>);
  t.Add({ZYDIS_MNEMONIC_KXNORW}, Logic<16, MaskOp::kXnor>);
  t.Add({ZYDIS_MNEMONIC_KXNORD}, Logic<32, MaskOp::kXnor>);
  t.Add({ZYDIS_MNEMONIC_KXNORQ}, Logic<64, MaskOp::kXnor>);
  t.Add({ZYDIS_MNEMONIC_KADDB}, Logic<8, MaskOp::kAdd>);
  t.Add({ZYDIS_MNEMONIC_KADDW}, Logic<16, MaskOp::kAdd>);
  t.Add({ZYDIS_MNEMONIC_KADDD}, Logic<32, MaskOp::kAdd>);
  t.Add({ZYDIS_MNEMONIC_KADDQ}, Logic<64, MaskOp::kAdd>);
  t.Add({ZYDIS_MNEMONIC_KNOTB}, Logic<8, MaskOp::kNot>);
  t.Add({ZYDIS_MNEMONIC_KNOTW}, Logic<16, MaskOp::kNot>);
  t.Add({ZYDIS_MNEMONIC_KNOTD}, Logic<32, MaskOp::kNot>);
  t.Add({ZYDIS_MNEMONIC_KNOTQ}, Logic<64, MaskOp::kNot>);

  t.Add({ZYDIS_MNEMONIC_KORTESTB}, TestFlags<8, true>);
  t.Add({ZYDIS_MNEMONIC_KORTESTW}, TestFlags<16, true>);
  t.Add({ZYDIS_MNEMONIC_KORTESTD}, TestFlags<32, true>);
  t.Add({ZYDIS_MNEMONIC_KORTESTQ}, TestFlags<64, true>);
  t.Add({ZYDIS_MNEMONIC_KTESTB}, TestFlags<8, false>);
  t.Add({ZYDIS_MNEMONIC_KTESTW}, TestFlags<16, false>);
  t.Add({ZYDIS_MNEMONIC_KTESTD}, TestFlags<32, false>);
  t.Add({ZYDIS_MNEMONIC_KTESTQ}, TestFlags<64, false>);

  t.Add({ZYDIS_MNEMONIC_KSHIFTLB}, Shift<8, true>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTLW}, Shift<16, true>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTLD}, Shift<32, true>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTLQ}, Shift<64, true>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTRB}, Shift<8, false>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTRW}, Shift<16, false>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTRD}, Shift<32, false>);
  t.Add({ZYDIS_MNEMONIC_KSHIFTRQ}, Shift<64, false>);

  t.Add({ZYDIS_MNEMONIC_KUNPCKBW}, Unpack<8>);
  t.Add({ZYDIS_MNEMONIC_KUNPCKWD}, Unpack<16>);
  t.Add({ZYDIS_MNEMONIC_KUNPCKDQ}, Unpack<32>);
}

}  // namespace pathprof::emulator
