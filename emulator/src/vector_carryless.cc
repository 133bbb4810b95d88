// Carry-less multiplication: pclmulqdq and its VEX/EVEX forms (vpclmulqdq, one product per
// 128-bit lane). liblzma computes its CRC64 and CRC32 with it. Exact polynomial arithmetic
// over GF(2), computed here.
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

// The 128-bit carry-less product of a and b: low 64 bits in lo, high in hi.
void CarrylessMultiply(uint64_t a, uint64_t b, uint64_t* lo, uint64_t* hi) {
  uint64_t l = 0, h = 0;
  for (unsigned i = 0; i < 64; ++i) {
    if (!((b >> i) & 1)) continue;
    l ^= a << i;
    if (i != 0) h ^= a >> (64 - i);
  }
  *lo = l;
  *hi = h;
}

// imm8 bit 0 picks the first source's quadword of each lane, bit 4 the second's.
Step CarrylessMultiplyQuadwords(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(s.imm.imm);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  for (unsigned lane = 0; lane < width / 16; ++lane) {
    uint64_t lo = 0, hi = 0;
    CarrylessMultiply(a.Get<uint64_t>(2 * lane + (imm & 1)),
                      b.Get<uint64_t>(2 * lane + ((imm >> 4) & 1)), &lo, &hi);
    r.Set<uint64_t>(2 * lane, lo);
    r.Set<uint64_t>(2 * lane + 1, hi);
  }
  return WriteVectorDestination(m, d, s.dst, r, width, 8) ? Step::kNext : Step::kEnded;
}

}  // namespace

void AddCarrylessMultiply(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PCLMULQDQ, ZYDIS_MNEMONIC_VPCLMULQDQ}, CarrylessMultiplyQuadwords);
}

}  // namespace pathprof::emulator
