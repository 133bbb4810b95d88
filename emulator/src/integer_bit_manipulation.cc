// BMI2 and ADX instructions whose results the SDM defines in full (no undefined flags, so they
// need not run on this CPU): pdep, pext, mulx, adcx, adox. Claimed once
// emulator_differential_bench drew them and windows ended there, unmodelled.
#include <Zydis/Zydis.h>

#include "integer_arithmetic.h"
#include "integer_handlers.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

// pdep r, a, mask: the low bits of a, in order, to the positions of mask's set bits.
// pext r, a, mask: the bits of a at mask's set bits, packed to the low end. No flags.
template <bool kDeposit>
Step BitDepositOrExtract(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, mask = 0;
  if (!ReadInt(m, d.op[1], size, &a) || !ReadInt(m, d.op[2], size, &mask)) return Step::kEnded;
  uint64_t r = 0, k = 0;
  for (unsigned bit = 0; bit < size * 8; ++bit) {
    if (!((mask >> bit) & 1)) continue;
    if (kDeposit)
      r |= ((a >> k) & 1) << bit;
    else
      r |= ((a >> bit) & 1) << k;
    ++k;
  }
  return WriteInt(m, d.op[0], size, r) ? Step::kNext : Step::kEnded;
}

// mulx hi, lo, src: rdx (edx) times src, unsigned; the high half to the first operand, the low
// to the second (the high one wins when they are one register). No flags.
Step MultiplyNoFlags(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t src = 0;
  if (!ReadInt(m, d.op[2], size, &src)) return Step::kEnded;
  const uint64_t rdx = m.s.gpr[kRdx] & SizeMask(size);
  uint64_t hi = 0, lo = 0;
  if (size == 8) {
    const unsigned __int128 p = static_cast<unsigned __int128>(rdx) * src;
    hi = static_cast<uint64_t>(p >> 64), lo = static_cast<uint64_t>(p);
  } else {
    const uint64_t p = rdx * src;
    hi = p >> 32, lo = p & 0xffffffffu;
  }
  if (!WriteInt(m, d.op[1], size, lo)) return Step::kEnded;
  return WriteInt(m, d.op[0], size, hi) ? Step::kNext : Step::kEnded;
}

// adcx (carry in and out through CF) and adox (through OF): dst += src + flag; no other flag.
template <uint64_t kFlag>
Step AddWithFlag(Machine& m, const DecodedInstruction& d) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[0], size, &a) || !ReadInt(m, d.op[1], size, &b)) return Step::kEnded;
  uint64_t f = 0;
  const uint64_t r = Add(a, b, (m.s.rflags & kFlag) ? 1 : 0, size, &f);
  if (!WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kFlag, (f & kCF) ? kFlag : 0);
  return Step::kNext;
}

}  // namespace

void AddBitManipulationOps(IntegerHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PDEP}, BitDepositOrExtract<true>);
  t.Add({ZYDIS_MNEMONIC_PEXT}, BitDepositOrExtract<false>);
  t.Add({ZYDIS_MNEMONIC_MULX}, MultiplyNoFlags);
  t.Add({ZYDIS_MNEMONIC_ADCX}, AddWithFlag<kCF>);
  t.Add({ZYDIS_MNEMONIC_ADOX}, AddWithFlag<kOF>);
}

}  // namespace pathprof::emulator
