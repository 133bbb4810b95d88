// Integer vector compares and tests: pcmpeq/pcmpgt into a vector (all-ones elements) or, in
// EVEX form, into an opmask; vpcmp[u]b/w/d/q with a predicate; vptestm/vptestnm; ptest; and
// the sign-bit gathers that turn a compare into a general register or an opmask (pmovmskb,
// movmskps/pd, vpmovb2m...) and back (vpmovm2b...).
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

template <typename T>
bool Equal(T a, T b) {
  return a == b;
}
template <typename T>
bool Greater(T a, T b) {
  return a > b;
}

// Writes per-element outcomes: into an opmask (EVEX: only selected elements can be set, the
// rest of the 64 bits zeroed) or as all-ones/zero elements of a vector.
template <typename T>
Step WriteOutcomes(Machine& m, const DecodedInstruction& d, const Operand& dst, uint64_t bits,
                   unsigned width) {
  const unsigned n = width / sizeof(T);
  if (IsMaskRegister(dst)) {
    WriteMaskRegister(m, dst, bits & SelectedElements(m, d, n));
    return Step::kNext;
  }
  Vector r;
  for (unsigned i = 0; i < n; ++i) r.Set<T>(i, ((bits >> i) & 1) ? static_cast<T>(~T{0}) : T{0});
  return WriteVectorDestination(m, d, dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// Reads both sources of a compare; a masked EVEX compare does not read the memory of elements
// it does not select.
template <typename T>
bool ReadCompareSources(Machine& m, const DecodedInstruction& d, const TwoSources& s,
                        unsigned width, Vector* a, Vector* b) {
  const uint64_t selected = SelectedElements(m, d, width / sizeof(T));
  return ReadVectorSource(m, d, s.a, width, a) &&
         ReadVectorSourceMasked(m, d, s.b, width, sizeof(T), selected, b);
}

template <typename T, bool (*Pred)(T, T)>
Step Compare(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  Vector a, b;
  if (!ReadCompareSources<T>(m, d, s, width, &a, &b)) return Step::kEnded;
  uint64_t bits = 0;
  for (unsigned i = 0; i < width / sizeof(T); ++i)
    if (Pred(a.Get<T>(i), b.Get<T>(i))) bits |= 1ull << i;
  return WriteOutcomes<T>(m, d, s.dst, bits, width);
}

// vpcmp[u]b/w/d/q k, a, b, imm8: eq, lt, le, false, neq, nlt, nle, true.
template <typename T>
Step CompareWithPredicate(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned predicate = static_cast<unsigned>(s.imm.imm & 7);
  Vector a, b;
  if (!ReadCompareSources<T>(m, d, s, width, &a, &b)) return Step::kEnded;
  uint64_t bits = 0;
  for (unsigned i = 0; i < width / sizeof(T); ++i) {
    const T x = a.Get<T>(i), y = b.Get<T>(i);
    bool r = false;
    switch (predicate) {
      case 0:
        r = x == y;
        break;
      case 1:
        r = x < y;
        break;
      case 2:
        r = x <= y;
        break;
      case 3:
        r = false;
        break;
      case 4:
        r = x != y;
        break;
      case 5:
        r = x >= y;
        break;
      case 6:
        r = x > y;
        break;
      default:
        r = true;
        break;
    }
    if (r) bits |= 1ull << i;
  }
  return WriteOutcomes<T>(m, d, s.dst, bits, width);
}

// vptestm (a & b != 0) and vptestnm (a & b == 0), per element into an opmask.
template <typename T, bool kNot>
Step TestIntoMask(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  Vector a, b;
  if (!ReadCompareSources<T>(m, d, s, width, &a, &b)) return Step::kEnded;
  uint64_t bits = 0;
  for (unsigned i = 0; i < width / sizeof(T); ++i)
    if (((a.Get<T>(i) & b.Get<T>(i)) != 0) != kNot) bits |= 1ull << i;
  return WriteOutcomes<T>(m, d, s.dst, bits, width);
}

template <typename T>
uint64_t SignBits(const Vector& v, unsigned width) {
  uint64_t bits = 0;
  for (unsigned i = 0; i < width / sizeof(T); ++i)
    if (v.b[i * sizeof(T) + sizeof(T) - 1] & 0x80) bits |= 1ull << i;
  return bits;
}

// pmovmskb, movmskps, movmskpd (and VEX forms): sign bits into a general register, the rest
// of it zeroed.
template <typename T>
Step SignBitsToRegister(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  Vector v;
  if (!ReadVectorSource(m, d, d.op[1], width, &v)) return Step::kEnded;
  return WriteInt(m, d.op[0], d.op[0].size, SignBits<T>(v, width)) ? Step::kNext : Step::kEnded;
}

// vpmovb2m/w2m/d2m/q2m: sign bits into an opmask.
template <typename T>
Step SignBitsToMask(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  Vector v;
  if (!ReadVectorSource(m, d, d.op[1], width, &v)) return Step::kEnded;
  WriteMaskRegister(m, d.op[0], SignBits<T>(v, width));
  return Step::kNext;
}

// vpmovm2b/w/d/q: each opmask bit to an all-ones or zero element.
template <typename T>
Step MaskToElements(Machine& m, const DecodedInstruction& d) {
  if (!IsMaskRegister(d.op[1])) return m.End(EmulationEnd::kUnmodelled);
  return WriteOutcomes<T>(m, d, d.op[0], m.s.k[d.op[1].reg.index], OperationWidth(d));
}

// ptest/vptest: ZF = (a & b) == 0, CF = (~a & b) == 0 over the whole width; vtestps/pd look
// at the sign bits only. AF, OF, PF, SF are cleared.
template <uint64_t kBits>
Step Test(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  Vector a, b;
  if (!ReadVectorSource(m, d, d.op[0], width, &a) || !ReadVectorSource(m, d, d.op[1], width, &b))
    return Step::kEnded;
  uint64_t any_and = 0, any_andn = 0;
  for (unsigned i = 0; i < width / 8; ++i) {
    const uint64_t x = a.Get<uint64_t>(i), y = b.Get<uint64_t>(i);
    any_and |= x & y & kBits;
    any_andn |= ~x & y & kBits;
  }
  SetArithmeticFlags(m, (any_and ? 0 : kZF) | (any_andn ? 0 : kCF));
  return Step::kNext;
}

}  // namespace

void AddVectorCompares(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PCMPEQB, ZYDIS_MNEMONIC_VPCMPEQB}, Compare<uint8_t, Equal>);
  t.Add({ZYDIS_MNEMONIC_PCMPEQW, ZYDIS_MNEMONIC_VPCMPEQW}, Compare<uint16_t, Equal>);
  t.Add({ZYDIS_MNEMONIC_PCMPEQD, ZYDIS_MNEMONIC_VPCMPEQD}, Compare<uint32_t, Equal>);
  t.Add({ZYDIS_MNEMONIC_PCMPEQQ, ZYDIS_MNEMONIC_VPCMPEQQ}, Compare<uint64_t, Equal>);
  t.Add({ZYDIS_MNEMONIC_PCMPGTB, ZYDIS_MNEMONIC_VPCMPGTB}, Compare<int8_t, Greater>);
  t.Add({ZYDIS_MNEMONIC_PCMPGTW, ZYDIS_MNEMONIC_VPCMPGTW}, Compare<int16_t, Greater>);
  t.Add({ZYDIS_MNEMONIC_PCMPGTD, ZYDIS_MNEMONIC_VPCMPGTD}, Compare<int32_t, Greater>);
  t.Add({ZYDIS_MNEMONIC_PCMPGTQ, ZYDIS_MNEMONIC_VPCMPGTQ}, Compare<int64_t, Greater>);
  t.Add({ZYDIS_MNEMONIC_VPCMPB}, CompareWithPredicate<int8_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPUB}, CompareWithPredicate<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPW}, CompareWithPredicate<int16_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPUW}, CompareWithPredicate<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPD}, CompareWithPredicate<int32_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPUD}, CompareWithPredicate<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPQ}, CompareWithPredicate<int64_t>);
  t.Add({ZYDIS_MNEMONIC_VPCMPUQ}, CompareWithPredicate<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_VPTESTMB}, TestIntoMask<uint8_t, false>);
  t.Add({ZYDIS_MNEMONIC_VPTESTMW}, TestIntoMask<uint16_t, false>);
  t.Add({ZYDIS_MNEMONIC_VPTESTMD}, TestIntoMask<uint32_t, false>);
  t.Add({ZYDIS_MNEMONIC_VPTESTMQ}, TestIntoMask<uint64_t, false>);
  t.Add({ZYDIS_MNEMONIC_VPTESTNMB}, TestIntoMask<uint8_t, true>);
  t.Add({ZYDIS_MNEMONIC_VPTESTNMW}, TestIntoMask<uint16_t, true>);
  t.Add({ZYDIS_MNEMONIC_VPTESTNMD}, TestIntoMask<uint32_t, true>);
  t.Add({ZYDIS_MNEMONIC_VPTESTNMQ}, TestIntoMask<uint64_t, true>);
  t.Add({ZYDIS_MNEMONIC_PTEST, ZYDIS_MNEMONIC_VPTEST}, Test<~0ull>);
  t.Add({ZYDIS_MNEMONIC_VTESTPS}, Test<0x8000000080000000ull>);
  t.Add({ZYDIS_MNEMONIC_VTESTPD}, Test<0x8000000000000000ull>);

  t.Add({ZYDIS_MNEMONIC_PMOVMSKB, ZYDIS_MNEMONIC_VPMOVMSKB}, SignBitsToRegister<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_MOVMSKPS, ZYDIS_MNEMONIC_VMOVMSKPS}, SignBitsToRegister<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_MOVMSKPD, ZYDIS_MNEMONIC_VMOVMSKPD}, SignBitsToRegister<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVB2M}, SignBitsToMask<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVW2M}, SignBitsToMask<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVD2M}, SignBitsToMask<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVQ2M}, SignBitsToMask<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVM2B}, MaskToElements<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVM2W}, MaskToElements<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVM2D}, MaskToElements<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPMOVM2Q}, MaskToElements<uint64_t>);
}

}  // namespace pathprof::emulator
