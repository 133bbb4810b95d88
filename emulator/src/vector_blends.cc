// Blends: each element from the first or the second source, chosen by an imm8 bit (blendps,
// blendpd, pblendw, vpblendd), by the sign of the matching element of a third vector
// (blendvps, blendvpd, pblendvb: legacy forms read xmm0 implicitly) or by an opmask bit
// (AVX-512 vpblendm*, vblendm*).
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

template <typename T>
void Choose(const Vector& a, const Vector& b, uint64_t pick_b, unsigned n, Vector* r) {
  for (unsigned i = 0; i < n; ++i) r->Set<T>(i, ((pick_b >> i) & 1) ? b.Get<T>(i) : a.Get<T>(i));
}

// imm8 bit i picks element i of the second source; pblendw reuses its 8 bits in every lane,
// the others have one bit per element.
template <typename T, bool kPerLane>
Step BlendByImmediate(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  uint64_t pick = s.imm.imm & 0xff;
  if (kPerLane)
    for (unsigned lane = 1; lane < width / 16; ++lane) pick |= (s.imm.imm & 0xff) << (8 * lane);
  Choose<T>(a, b, pick, n, &r);
  return WriteVectorDestination(m, d, s.dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// The sign bit of each element of the selector picks the second source.
template <typename T>
Step BlendByVector(Machine& m, const DecodedInstruction& d) {
  const bool legacy = !d.vex_or_evex;
  const Operand& dst = d.op[0];
  const Operand& first = legacy ? d.op[0] : d.op[1];
  const Operand& second = legacy ? d.op[1] : d.op[2];
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  Vector a, b, selector, r;
  if (!ReadVectorSource(m, d, first, width, &a) || !ReadVectorSource(m, d, second, width, &b))
    return Step::kEnded;
  if (legacy) {
    selector = RegisterValue(m, 0);
  } else if (!ReadVectorSource(m, d, d.op[3], width, &selector)) {
    return Step::kEnded;
  }
  uint64_t pick = 0;
  for (unsigned i = 0; i < n; ++i)
    if (selector.b[i * sizeof(T) + sizeof(T) - 1] & 0x80) pick |= 1ull << i;
  Choose<T>(a, b, pick, n, &r);
  return WriteVectorDestination(m, d, dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// vpblendmb/w/d/q, vblendmps/pd: opmask bit set, the second source; clear, the first (or zero
// with {z}). Without an opmask every element comes from the second source.
template <typename T>
Step BlendByMask(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  const uint64_t pick = SelectedElements(m, d, n);
  Vector a, b, r;
  // The second source is read whole: reading more than the CPU only ends a window early,
  // reading less could miss a fault.
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  if (d.zeroing) a = Vector{};
  Choose<T>(a, b, pick, n, &r);
  WriteVectorRegister(m, d, s.dst.reg.index, r, width);
  return Step::kNext;
}

}  // namespace

void AddVectorBlends(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_BLENDPS, ZYDIS_MNEMONIC_VBLENDPS}, BlendByImmediate<uint32_t, false>);
  t.Add({ZYDIS_MNEMONIC_BLENDPD, ZYDIS_MNEMONIC_VBLENDPD}, BlendByImmediate<uint64_t, false>);
  t.Add({ZYDIS_MNEMONIC_VPBLENDD}, BlendByImmediate<uint32_t, false>);
  t.Add({ZYDIS_MNEMONIC_PBLENDW, ZYDIS_MNEMONIC_VPBLENDW}, BlendByImmediate<uint16_t, true>);
  t.Add({ZYDIS_MNEMONIC_BLENDVPS, ZYDIS_MNEMONIC_VBLENDVPS}, BlendByVector<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_BLENDVPD, ZYDIS_MNEMONIC_VBLENDVPD}, BlendByVector<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_PBLENDVB, ZYDIS_MNEMONIC_VPBLENDVB}, BlendByVector<uint8_t>);
  t.AddWithControlMask({ZYDIS_MNEMONIC_VPBLENDMB}, BlendByMask<uint8_t>);
  t.AddWithControlMask({ZYDIS_MNEMONIC_VPBLENDMW}, BlendByMask<uint16_t>);
  t.AddWithControlMask({ZYDIS_MNEMONIC_VPBLENDMD, ZYDIS_MNEMONIC_VBLENDMPS}, BlendByMask<uint32_t>);
  t.AddWithControlMask({ZYDIS_MNEMONIC_VPBLENDMQ, ZYDIS_MNEMONIC_VBLENDMPD}, BlendByMask<uint64_t>);
}

}  // namespace pathprof::emulator
