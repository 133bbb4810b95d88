// Vector instructions that move elements around: shuffles (pshufb, pshufd, shufps...),
// alignr, unpacks, packs, element inserts and extracts, broadcasts, zero/sign extensions and
// the 128-bit lane moves of AVX2 and AVX-512. Most work per 128-bit lane, as the SDM defines
// them. Their memory sources are read whole even under an EVEX opmask: they are not
// element-wise, so the CPU does not suppress faults on masked-off elements either.
#include <limits>

#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

Step Finish(Machine& m, const DecodedInstruction& d, const Operand& dst, const Vector& r,
            unsigned width, unsigned element) {
  return WriteVectorDestination(m, d, dst, r, width, element) ? Step::kNext : Step::kEnded;
}

// pshufb: each byte picks a byte of its own lane by the low 4 bits of the control byte, or
// is zero when the control's bit 7 is set.
Step ShuffleBytes(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  Vector a, control, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &control))
    return Step::kEnded;
  for (unsigned i = 0; i < width; ++i) {
    const uint8_t c = control.b[i];
    r.b[i] = (c & 0x80) ? 0 : a.b[(i & ~15u) + (c & 15)];
  }
  return Finish(m, d, s.dst, r, width, 1);
}

// pshufd: dwords of each lane picked by imm8's 2-bit fields.
Step ShuffleDwords(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(d.op[2].imm & 0xff);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], width, &a)) return Step::kEnded;
  for (unsigned i = 0; i < width / 4; ++i)
    r.Set<uint32_t>(i, a.Get<uint32_t>((i & ~3u) + ((imm >> ((i & 3) * 2)) & 3)));
  return Finish(m, d, d.op[0], r, width, 4);
}

// pshuflw/pshufhw: the low (high) four words of each lane picked by imm8, the rest copied.
template <bool kHigh>
Step ShuffleWords(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(d.op[2].imm & 0xff);
  Vector a;
  if (!ReadVectorSource(m, d, d.op[1], width, &a)) return Step::kEnded;
  Vector r = a;
  const unsigned base = kHigh ? 4 : 0;
  for (unsigned lane = 0; lane < width / 2; lane += 8)
    for (unsigned i = 0; i < 4; ++i)
      r.Set<uint16_t>(lane + base + i, a.Get<uint16_t>(lane + base + ((imm >> (i * 2)) & 3)));
  return Finish(m, d, d.op[0], r, width, 2);
}

// palignr: per lane, the 32 bytes (first source above second) shifted right by imm8 bytes.
Step AlignRight(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned shift = static_cast<unsigned>(s.imm.imm & 0xff);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  for (unsigned lane = 0; lane < width; lane += 16) {
    for (unsigned i = 0; i < 16; ++i) {
      const unsigned k = i + shift;
      r.b[lane + i] = k < 16 ? b.b[lane + k] : k < 32 ? a.b[lane + k - 16] : 0;
    }
  }
  return Finish(m, d, s.dst, r, width, 1);
}

// punpckl*/punpckh*, unpcklps/pd, unpckhps/pd: the low (high) halves of each lane of both
// sources, interleaved.
template <typename T, bool kHigh>
Step Interleave(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  constexpr unsigned kPerLane = 16 / sizeof(T);
  for (unsigned lane = 0; lane < width / sizeof(T); lane += kPerLane) {
    const unsigned base = lane + (kHigh ? kPerLane / 2 : 0);
    for (unsigned i = 0; i < kPerLane / 2; ++i) {
      r.Set<T>(lane + 2 * i, a.Get<T>(base + i));
      r.Set<T>(lane + 2 * i + 1, b.Get<T>(base + i));
    }
  }
  return Finish(m, d, s.dst, r, width, sizeof(T));
}

// shufps: per lane, two dwords of the first source then two of the second, by imm8.
Step ShuffleSingles(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(s.imm.imm & 0xff);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  for (unsigned lane = 0; lane < width / 4; lane += 4) {
    for (unsigned i = 0; i < 4; ++i) {
      const Vector& from = i < 2 ? a : b;
      r.Set<uint32_t>(lane + i, from.Get<uint32_t>(lane + ((imm >> (2 * i)) & 3)));
    }
  }
  return Finish(m, d, s.dst, r, width, 4);
}

// shufpd: per lane, one qword of each source, by one imm8 bit each.
Step ShuffleDoubles(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(s.imm.imm & 0xff);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  for (unsigned i = 0; i < width / 8; ++i) {
    const Vector& from = (i & 1) ? b : a;
    r.Set<uint64_t>(i, from.Get<uint64_t>((i & ~1u) + ((imm >> i) & 1)));
  }
  return Finish(m, d, s.dst, r, width, 8);
}

// packsswb, packuswb, packssdw, packusdw: per lane, the first source's elements narrowed with
// saturation, then the second's.
template <typename From, typename To>
Step Pack(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, width, &b))
    return Step::kEnded;
  constexpr unsigned kPerLane = 16 / sizeof(From);
  auto narrow = [](From v) {
    if (v < static_cast<From>(std::numeric_limits<To>::min()))
      return std::numeric_limits<To>::min();
    if (v > static_cast<From>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  };
  for (unsigned lane = 0; lane < width / 16; ++lane) {
    for (unsigned i = 0; i < kPerLane; ++i) {
      r.Set<To>(lane * 2 * kPerLane + i, narrow(a.Get<From>(lane * kPerLane + i)));
      r.Set<To>(lane * 2 * kPerLane + kPerLane + i, narrow(b.Get<From>(lane * kPerLane + i)));
    }
  }
  return Finish(m, d, s.dst, r, width, sizeof(To));
}

// pinsrb/w/d/q: one element from a general register or memory into the element imm8 selects
// (legacy: of the destination; VEX: of a copy of the first source).
template <typename T>
Step Insert(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  if (!IsVectorRegister(s.a)) return m.End(EmulationEnd::kUnmodelled);  // MMX pinsrw
  uint64_t v = 0;
  if (!ReadInt(m, s.b, sizeof(T), &v)) return Step::kEnded;
  Vector r = RegisterValue(m, s.a.reg.index);
  std::memset(r.b + 16, 0, kMaxVectorBytes - 16);
  r.Set<T>(static_cast<unsigned>(s.imm.imm & (16 / sizeof(T) - 1)), static_cast<T>(v));
  WriteVectorRegister(m, d, s.dst.reg.index, r, 16);
  return Step::kNext;
}

// pextrb/w/d/q, extractps: the element imm8 selects, to memory or zero-extended into a
// general register.
template <typename T>
Step Extract(Machine& m, const DecodedInstruction& d) {
  const Operand& dst = d.op[0];
  const Operand& src = d.op[1];
  if (!IsVectorRegister(src)) return m.End(EmulationEnd::kUnmodelled);  // MMX pextrw
  const Vector a = RegisterValue(m, src.reg.index);
  const uint64_t v = a.Get<T>(static_cast<unsigned>(d.op[2].imm & (16 / sizeof(T) - 1)));
  const unsigned size = dst.type == OperandType::kRegister ? dst.size : sizeof(T);
  return WriteInt(m, dst, size, v) ? Step::kNext : Step::kEnded;
}

// vpbroadcastb/w/d/q, vbroadcastss/sd: element 0 of an xmm, a memory element or (EVEX) a
// general register, to every element.
template <typename T>
Step Broadcast(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  uint64_t v = 0;
  if (!ReadScalarSource(m, d.op[1], sizeof(T), &v)) return Step::kEnded;
  Vector r;
  for (unsigned i = 0; i < width / sizeof(T); ++i) r.Set<T>(i, static_cast<T>(v));
  return Finish(m, d, d.op[0], r, width, sizeof(T));
}

// vbroadcasti128/f128, vbroadcasti32x4...: a 16- or 32-byte memory block to every block.
template <unsigned kElement>
Step BroadcastBlock(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned block = d.op[1].size;
  if (!IsMemory(d.op[1]) || block == 0 || width % block != 0)
    return m.End(EmulationEnd::kUnmodelled);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], block, &a)) return Step::kEnded;
  for (unsigned i = 0; i < width; i += block) std::memcpy(r.b + i, a.b, block);
  return Finish(m, d, d.op[0], r, width, kElement);
}

// movddup (qword 0 of each lane twice; legacy reads m64), movsldup/movshdup (even/odd dwords
// twice).
Step DuplicateDoubles(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  Vector a, r;
  const unsigned size = IsMemory(d.op[1]) && width == 16 ? 8 : width;
  if (!ReadVectorSource(m, d, d.op[1], size, &a)) return Step::kEnded;
  for (unsigned i = 0; i < width / 8; ++i) r.Set<uint64_t>(i, a.Get<uint64_t>(i & ~1u));
  return Finish(m, d, d.op[0], r, width, 8);
}

template <unsigned kOdd>
Step DuplicateSingles(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], width, &a)) return Step::kEnded;
  for (unsigned i = 0; i < width / 4; ++i) r.Set<uint32_t>(i, a.Get<uint32_t>((i & ~1u) + kOdd));
  return Finish(m, d, d.op[0], r, width, 4);
}

// pmovzx/pmovsx: the low elements of the source, each widened to a destination element.
template <typename From, typename To>
Step Extend(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(To);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], n * sizeof(From), &a)) return Step::kEnded;
  for (unsigned i = 0; i < n; ++i) r.Set<To>(i, static_cast<To>(a.Get<From>(i)));
  return Finish(m, d, d.op[0], r, width, sizeof(To));
}

// vpermq/vpermpd imm8: qwords of each 256-bit half picked by imm8's 2-bit fields.
Step PermuteQwordsByImmediate(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned imm = static_cast<unsigned>(d.op[2].imm & 0xff);
  if (d.op[2].type != OperandType::kImmediate) return m.End(EmulationEnd::kUnmodelled);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], width, &a)) return Step::kEnded;
  for (unsigned i = 0; i < width / 8; ++i)
    r.Set<uint64_t>(i, a.Get<uint64_t>((i & ~3u) + ((imm >> ((i & 3) * 2)) & 3)));
  return Finish(m, d, d.op[0], r, width, 8);
}

// vpermd/vpermps/vpermb/vpermw and the register form of vpermq/vpermpd: each element picked
// across the whole register by the index in the first source.
template <typename T>
Step PermuteByIndex(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  Vector index, table, r;
  if (!ReadVectorSource(m, d, s.a, width, &index) || !ReadVectorSource(m, d, s.b, width, &table))
    return Step::kEnded;
  for (unsigned i = 0; i < n; ++i)
    r.Set<T>(i, table.Get<T>(static_cast<unsigned>(index.Get<T>(i) & (n - 1))));
  return Finish(m, d, s.dst, r, width, sizeof(T));
}

Step PermuteQwords(Machine& m, const DecodedInstruction& d) {
  if (d.op[2].type == OperandType::kImmediate) return PermuteQwordsByImmediate(m, d);
  return PermuteByIndex<uint64_t>(m, d);
}

// vperm2i128/vperm2f128: each 128-bit half of the result is one of the four halves of the
// sources, or zero.
Step PermuteLanes(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned imm = static_cast<unsigned>(s.imm.imm & 0xff);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, 32, &a) || !ReadVectorSource(m, d, s.b, 32, &b))
    return Step::kEnded;
  for (unsigned half = 0; half < 2; ++half) {
    const unsigned control = imm >> (4 * half);
    if (control & 8) continue;
    const Vector& from = (control & 2) ? b : a;
    std::memcpy(r.b + 16 * half, from.b + 16 * (control & 1), 16);
  }
  return Finish(m, d, s.dst, r, 32, 32);
}

// vinserti128, vinsertf32x4...: a copy of the first source with the block imm8 selects
// replaced by the second source.
template <unsigned kElement>
Step InsertBlock(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned block = IsMemory(s.b) ? s.b.size : s.b.reg.size;
  if (block == 0 || width % block != 0) return m.End(EmulationEnd::kUnmodelled);
  Vector a, b;
  if (!ReadVectorSource(m, d, s.a, width, &a) || !ReadVectorSource(m, d, s.b, block, &b))
    return Step::kEnded;
  const unsigned at = static_cast<unsigned>(s.imm.imm & (width / block - 1)) * block;
  std::memcpy(a.b + at, b.b, block);
  return Finish(m, d, s.dst, a, width, kElement);
}

// vextracti128, vextractf32x4...: the block imm8 selects, to an xmm/ymm or memory.
template <unsigned kElement>
Step ExtractBlock(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const Operand& dst = d.op[0];
  const unsigned block = IsMemory(dst) ? dst.size : dst.reg.size;
  if (block == 0 || width % block != 0) return m.End(EmulationEnd::kUnmodelled);
  Vector a, r;
  if (!ReadVectorSource(m, d, d.op[1], width, &a)) return Step::kEnded;
  const unsigned at = static_cast<unsigned>(d.op[2].imm & (width / block - 1)) * block;
  std::memcpy(r.b, a.b + at, block);
  return Finish(m, d, dst, r, block, kElement);
}

}  // namespace

void AddVectorShuffles(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PSHUFB, ZYDIS_MNEMONIC_VPSHUFB}, ShuffleBytes);
  t.Add({ZYDIS_MNEMONIC_PSHUFD, ZYDIS_MNEMONIC_VPSHUFD}, ShuffleDwords);
  t.Add({ZYDIS_MNEMONIC_PSHUFLW, ZYDIS_MNEMONIC_VPSHUFLW}, ShuffleWords<false>);
  t.Add({ZYDIS_MNEMONIC_PSHUFHW, ZYDIS_MNEMONIC_VPSHUFHW}, ShuffleWords<true>);
  t.Add({ZYDIS_MNEMONIC_PALIGNR, ZYDIS_MNEMONIC_VPALIGNR}, AlignRight);
  t.Add({ZYDIS_MNEMONIC_PUNPCKLBW, ZYDIS_MNEMONIC_VPUNPCKLBW}, Interleave<uint8_t, false>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKLWD, ZYDIS_MNEMONIC_VPUNPCKLWD}, Interleave<uint16_t, false>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKLDQ, ZYDIS_MNEMONIC_VPUNPCKLDQ, ZYDIS_MNEMONIC_UNPCKLPS,
         ZYDIS_MNEMONIC_VUNPCKLPS},
        Interleave<uint32_t, false>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKLQDQ, ZYDIS_MNEMONIC_VPUNPCKLQDQ, ZYDIS_MNEMONIC_UNPCKLPD,
         ZYDIS_MNEMONIC_VUNPCKLPD},
        Interleave<uint64_t, false>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKHBW, ZYDIS_MNEMONIC_VPUNPCKHBW}, Interleave<uint8_t, true>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKHWD, ZYDIS_MNEMONIC_VPUNPCKHWD}, Interleave<uint16_t, true>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKHDQ, ZYDIS_MNEMONIC_VPUNPCKHDQ, ZYDIS_MNEMONIC_UNPCKHPS,
         ZYDIS_MNEMONIC_VUNPCKHPS},
        Interleave<uint32_t, true>);
  t.Add({ZYDIS_MNEMONIC_PUNPCKHQDQ, ZYDIS_MNEMONIC_VPUNPCKHQDQ, ZYDIS_MNEMONIC_UNPCKHPD,
         ZYDIS_MNEMONIC_VUNPCKHPD},
        Interleave<uint64_t, true>);
  t.Add({ZYDIS_MNEMONIC_SHUFPS, ZYDIS_MNEMONIC_VSHUFPS}, ShuffleSingles);
  t.Add({ZYDIS_MNEMONIC_SHUFPD, ZYDIS_MNEMONIC_VSHUFPD}, ShuffleDoubles);
  t.Add({ZYDIS_MNEMONIC_PACKSSWB, ZYDIS_MNEMONIC_VPACKSSWB}, Pack<int16_t, int8_t>);
  t.Add({ZYDIS_MNEMONIC_PACKUSWB, ZYDIS_MNEMONIC_VPACKUSWB}, Pack<int16_t, uint8_t>);
  t.Add({ZYDIS_MNEMONIC_PACKSSDW, ZYDIS_MNEMONIC_VPACKSSDW}, Pack<int32_t, int16_t>);
  t.Add({ZYDIS_MNEMONIC_PACKUSDW, ZYDIS_MNEMONIC_VPACKUSDW}, Pack<int32_t, uint16_t>);
  t.Add({ZYDIS_MNEMONIC_PINSRB, ZYDIS_MNEMONIC_VPINSRB}, Insert<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_PINSRW, ZYDIS_MNEMONIC_VPINSRW}, Insert<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_PINSRD, ZYDIS_MNEMONIC_VPINSRD}, Insert<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_PINSRQ, ZYDIS_MNEMONIC_VPINSRQ}, Insert<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_PEXTRB, ZYDIS_MNEMONIC_VPEXTRB}, Extract<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_PEXTRW, ZYDIS_MNEMONIC_VPEXTRW}, Extract<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_PEXTRD, ZYDIS_MNEMONIC_VPEXTRD, ZYDIS_MNEMONIC_EXTRACTPS,
         ZYDIS_MNEMONIC_VEXTRACTPS},
        Extract<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_PEXTRQ, ZYDIS_MNEMONIC_VPEXTRQ}, Extract<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_VPBROADCASTB}, Broadcast<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_VPBROADCASTW}, Broadcast<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_VPBROADCASTD, ZYDIS_MNEMONIC_VBROADCASTSS}, Broadcast<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPBROADCASTQ, ZYDIS_MNEMONIC_VBROADCASTSD}, Broadcast<uint64_t>);
  t.Add({ZYDIS_MNEMONIC_VBROADCASTI128, ZYDIS_MNEMONIC_VBROADCASTF128,
         ZYDIS_MNEMONIC_VBROADCASTI32X4, ZYDIS_MNEMONIC_VBROADCASTF32X4,
         ZYDIS_MNEMONIC_VBROADCASTI32X8, ZYDIS_MNEMONIC_VBROADCASTF32X8},
        BroadcastBlock<4>);
  t.Add({ZYDIS_MNEMONIC_VBROADCASTI64X2, ZYDIS_MNEMONIC_VBROADCASTF64X2,
         ZYDIS_MNEMONIC_VBROADCASTI64X4, ZYDIS_MNEMONIC_VBROADCASTF64X4},
        BroadcastBlock<8>);
  t.Add({ZYDIS_MNEMONIC_MOVDDUP, ZYDIS_MNEMONIC_VMOVDDUP}, DuplicateDoubles);
  t.Add({ZYDIS_MNEMONIC_MOVSLDUP, ZYDIS_MNEMONIC_VMOVSLDUP}, DuplicateSingles<0>);
  t.Add({ZYDIS_MNEMONIC_MOVSHDUP, ZYDIS_MNEMONIC_VMOVSHDUP}, DuplicateSingles<1>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXBW, ZYDIS_MNEMONIC_VPMOVZXBW}, Extend<uint8_t, uint16_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXBD, ZYDIS_MNEMONIC_VPMOVZXBD}, Extend<uint8_t, uint32_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXBQ, ZYDIS_MNEMONIC_VPMOVZXBQ}, Extend<uint8_t, uint64_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXWD, ZYDIS_MNEMONIC_VPMOVZXWD}, Extend<uint16_t, uint32_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXWQ, ZYDIS_MNEMONIC_VPMOVZXWQ}, Extend<uint16_t, uint64_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVZXDQ, ZYDIS_MNEMONIC_VPMOVZXDQ}, Extend<uint32_t, uint64_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXBW, ZYDIS_MNEMONIC_VPMOVSXBW}, Extend<int8_t, int16_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXBD, ZYDIS_MNEMONIC_VPMOVSXBD}, Extend<int8_t, int32_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXBQ, ZYDIS_MNEMONIC_VPMOVSXBQ}, Extend<int8_t, int64_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXWD, ZYDIS_MNEMONIC_VPMOVSXWD}, Extend<int16_t, int32_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXWQ, ZYDIS_MNEMONIC_VPMOVSXWQ}, Extend<int16_t, int64_t>);
  t.Add({ZYDIS_MNEMONIC_PMOVSXDQ, ZYDIS_MNEMONIC_VPMOVSXDQ}, Extend<int32_t, int64_t>);
  t.Add({ZYDIS_MNEMONIC_VPERMQ, ZYDIS_MNEMONIC_VPERMPD}, PermuteQwords);
  t.Add({ZYDIS_MNEMONIC_VPERMD, ZYDIS_MNEMONIC_VPERMPS}, PermuteByIndex<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPERMW}, PermuteByIndex<uint16_t>);
  t.Add({ZYDIS_MNEMONIC_VPERMB}, PermuteByIndex<uint8_t>);
  t.Add({ZYDIS_MNEMONIC_VPERM2I128, ZYDIS_MNEMONIC_VPERM2F128}, PermuteLanes);
  t.Add({ZYDIS_MNEMONIC_VINSERTI128, ZYDIS_MNEMONIC_VINSERTF128, ZYDIS_MNEMONIC_VINSERTI32X4,
         ZYDIS_MNEMONIC_VINSERTF32X4, ZYDIS_MNEMONIC_VINSERTI32X8, ZYDIS_MNEMONIC_VINSERTF32X8},
        InsertBlock<4>);
  t.Add({ZYDIS_MNEMONIC_VINSERTI64X2, ZYDIS_MNEMONIC_VINSERTF64X2, ZYDIS_MNEMONIC_VINSERTI64X4,
         ZYDIS_MNEMONIC_VINSERTF64X4},
        InsertBlock<8>);
  t.Add({ZYDIS_MNEMONIC_VEXTRACTI128, ZYDIS_MNEMONIC_VEXTRACTF128, ZYDIS_MNEMONIC_VEXTRACTI32X4,
         ZYDIS_MNEMONIC_VEXTRACTF32X4, ZYDIS_MNEMONIC_VEXTRACTI32X8, ZYDIS_MNEMONIC_VEXTRACTF32X8},
        ExtractBlock<4>);
  t.Add({ZYDIS_MNEMONIC_VEXTRACTI64X2, ZYDIS_MNEMONIC_VEXTRACTF64X2, ZYDIS_MNEMONIC_VEXTRACTI64X4,
         ZYDIS_MNEMONIC_VEXTRACTF64X4},
        ExtractBlock<8>);
}

}  // namespace pathprof::emulator
