// Element-wise integer vector instructions: add, subtract (wrapping and saturating), min/max,
// average, multiplies, the bitwise operations (integer and ps/pd forms alike: they are exact
// bit operations that raise no floating-point exception), absolute values, shifts and
// vpternlog. Every one is exact integer arithmetic, so it is computed here rather than on the
// host; EVEX masking and broadcasts come from vector_operands.
#include <limits>
#include <type_traits>

#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

template <typename T>
using Widened = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;

// clang-format off
template <typename T> T Add(T a, T b) { return static_cast<T>(a + b); }
template <typename T> T Sub(T a, T b) { return static_cast<T>(a - b); }
template <typename T> T And(T a, T b) { return a & b; }
template <typename T> T AndNot(T a, T b) { return static_cast<T>(~a & b); }
template <typename T> T Or(T a, T b) { return a | b; }
template <typename T> T Xor(T a, T b) { return a ^ b; }
template <typename T> T Min(T a, T b) { return a < b ? a : b; }
template <typename T> T Max(T a, T b) { return a > b ? a : b; }
// clang-format on

template <typename T>
T Saturate(int64_t v) {
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v > static_cast<int64_t>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
template <typename T>
T AddSaturate(T a, T b) {
  return Saturate<T>(int64_t{a} + int64_t{b});
}
template <typename T>
T SubSaturate(T a, T b) {
  return Saturate<T>(int64_t{a} - int64_t{b});
}
template <typename T>
T Average(T a, T b) {
  return static_cast<T>((uint32_t{a} + b + 1) >> 1);
}

template <typename T>
T MultiplyLow(T a, T b) {
  return static_cast<T>(static_cast<Widened<T>>(a) * static_cast<Widened<T>>(b));
}
template <typename T>
T MultiplyHigh(T a, T b) {  // 16-bit elements
  return static_cast<T>((static_cast<Widened<T>>(a) * static_cast<Widened<T>>(b)) >> 16);
}
// pmuludq / pmuldq: the low 32 bits of each 64-bit element, multiplied to 64 bits.
uint64_t MultiplyEvenUnsigned(uint64_t a, uint64_t b) {
  return (a & 0xffffffffu) * (b & 0xffffffffu);
}
uint64_t MultiplyEvenSigned(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>(int64_t{static_cast<int32_t>(a)} * static_cast<int32_t>(b));
}

// Per-element shift counts (vpsllvd...): a count past the element width gives 0 (logical) or
// the sign (arithmetic).
template <typename T>
T ShiftLeftBy(T a, T count) {
  return count >= sizeof(T) * 8 ? 0 : static_cast<T>(a << count);
}
template <typename T>
T ShiftRightBy(T a, T count) {
  return count >= sizeof(T) * 8 ? 0 : static_cast<T>(a >> count);
}
template <typename T>
T ShiftArithmeticBy(T a, T count) {
  using S = std::make_signed_t<T>;
  const unsigned c = count >= sizeof(T) * 8 ? sizeof(T) * 8 - 1 : static_cast<unsigned>(count);
  return static_cast<T>(static_cast<S>(a) >> c);
}

template <typename T>
T Absolute(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(a < 0 ? static_cast<U>(0u - static_cast<U>(a)) : static_cast<U>(a));
}

// psignb/w/d: a negated, zeroed or kept as b is negative, zero or positive.
template <typename T>
T Sign(T a, T b) {
  return b < 0 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a)) : b == 0 ? 0 : a;
}

// pmaddwd per dword: the two signed word products added (0x8000 * 0x8000 twice wraps to
// INT32_MIN, as the CPU gives it).
inline uint32_t MultiplyAddWords(uint32_t a, uint32_t b) {
  const int64_t lo = int64_t{static_cast<int16_t>(a)} * static_cast<int16_t>(b);
  const int64_t hi = int64_t{static_cast<int16_t>(a >> 16)} * static_cast<int16_t>(b >> 16);
  return static_cast<uint32_t>(lo + hi);
}
// psadbw per qword: the sum of the eight bytes' absolute differences, in the low word.
inline uint64_t SumAbsoluteDifferences(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  for (int i = 0; i < 8; ++i) {
    const int x = static_cast<int>((a >> (8 * i)) & 0xff),
              y = static_cast<int>((b >> (8 * i)) & 0xff);
    sum += static_cast<uint64_t>(x > y ? x - y : y - x);
  }
  return sum;
}

// dst = fn(a, b) per element; masked-off elements of a memory b are not read.
template <typename T, T (*Fn)(T, T)>
Step ElementWise(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  const uint64_t selected = SelectedElements(m, d, n);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) ||
      !ReadVectorSourceMasked(m, d, s.b, width, sizeof(T), selected, &b))
    return Step::kEnded;
  for (unsigned i = 0; i < n; ++i) r.Set<T>(i, Fn(a.Get<T>(i), b.Get<T>(i)));
  return WriteVectorDestination(m, d, s.dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

template <typename T, T (*Fn)(T)>
Step Unary(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  Vector a, r;
  if (!ReadVectorSourceMasked(m, d, d.op[1], width, sizeof(T), SelectedElements(m, d, n), &a))
    return Step::kEnded;
  for (unsigned i = 0; i < n; ++i) r.Set<T>(i, Fn(a.Get<T>(i)));
  return WriteVectorDestination(m, d, d.op[0], r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

enum class ShiftKind { kLeft, kRight, kArithmetic };

// psllw/pslld/psllq, psrl*, psra*: every element by one count, from an imm8 or from the low
// 64 bits of an xmm/m128.
template <typename T, ShiftKind K>
Step UniformShift(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  uint64_t count = 0;
  if (s.b.type == OperandType::kImmediate) {
    count = s.b.imm & 0xff;
  } else {
    Vector c;
    if (!ReadVectorSource(m, d, s.b, 16, &c)) return Step::kEnded;
    count = c.Get<uint64_t>(0);
  }
  Vector a, r;
  if (!ReadVectorSourceMasked(m, d, s.a, width, sizeof(T), SelectedElements(m, d, n), &a))
    return Step::kEnded;
  const uint64_t bits = sizeof(T) * 8;
  for (unsigned i = 0; i < n; ++i) {
    const T x = a.Get<T>(i);
    T y = 0;
    if constexpr (K == ShiftKind::kLeft) {
      y = count >= bits ? 0 : static_cast<T>(x << count);
    } else if constexpr (K == ShiftKind::kRight) {
      y = count >= bits ? 0 : static_cast<T>(x >> count);
    } else {
      using S = std::make_signed_t<T>;
      y = static_cast<T>(static_cast<S>(x) >> (count >= bits ? bits - 1 : count));
    }
    r.Set<T>(i, y);
  }
  return WriteVectorDestination(m, d, s.dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// pslldq/psrldq: each 128-bit lane shifted by imm8 bytes (16 or more clears it).
template <bool kLeft>
Step LaneByteShift(Machine& m, const DecodedInstruction& d) {
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned count = static_cast<unsigned>(s.b.imm & 0xff);
  Vector a, r;
  if (!ReadVectorSource(m, d, s.a, width, &a)) return Step::kEnded;
  for (unsigned lane = 0; lane < width; lane += 16) {
    for (unsigned i = 0; i < 16; ++i) {
      const int from =
          kLeft ? static_cast<int>(i) - static_cast<int>(count) : static_cast<int>(i + count);
      r.b[lane + i] = from >= 0 && from < 16 ? a.b[lane + from] : 0;
    }
  }
  return WriteVectorDestination(m, d, s.dst, r, width, 16) ? Step::kNext : Step::kEnded;
}

// vpternlogd/q: every result bit is imm8's bit at index (dst bit, src2 bit, src3 bit).
template <typename T>
Step TernaryLogic(Machine& m, const DecodedInstruction& d) {
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  const uint64_t selected = SelectedElements(m, d, n);
  const unsigned table = static_cast<unsigned>(d.op[3].imm & 0xff);
  Vector a, b, c, r;
  if (!ReadVectorSource(m, d, d.op[0], width, &a) || !ReadVectorSource(m, d, d.op[1], width, &b) ||
      !ReadVectorSourceMasked(m, d, d.op[2], width, sizeof(T), selected, &c))
    return Step::kEnded;
  for (unsigned w = 0; w < width / 8; ++w) {
    const uint64_t x = a.Get<uint64_t>(w), y = b.Get<uint64_t>(w), z = c.Get<uint64_t>(w);
    uint64_t out = 0;
    for (unsigned index = 0; index < 8; ++index) {
      if (!((table >> index) & 1)) continue;
      out |= ((index & 4) ? x : ~x) & ((index & 2) ? y : ~y) & ((index & 1) ? z : ~z);
    }
    r.Set<uint64_t>(w, out);
  }
  return WriteVectorDestination(m, d, d.op[0], r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

}  // namespace

void AddVectorIntegerOps(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PADDB, ZYDIS_MNEMONIC_VPADDB}, ElementWise<uint8_t, Add>);
  t.Add({ZYDIS_MNEMONIC_PADDW, ZYDIS_MNEMONIC_VPADDW}, ElementWise<uint16_t, Add>);
  t.Add({ZYDIS_MNEMONIC_PADDD, ZYDIS_MNEMONIC_VPADDD}, ElementWise<uint32_t, Add>);
  t.Add({ZYDIS_MNEMONIC_PADDQ, ZYDIS_MNEMONIC_VPADDQ}, ElementWise<uint64_t, Add>);
  t.Add({ZYDIS_MNEMONIC_PSUBB, ZYDIS_MNEMONIC_VPSUBB}, ElementWise<uint8_t, Sub>);
  t.Add({ZYDIS_MNEMONIC_PSUBW, ZYDIS_MNEMONIC_VPSUBW}, ElementWise<uint16_t, Sub>);
  t.Add({ZYDIS_MNEMONIC_PSUBD, ZYDIS_MNEMONIC_VPSUBD}, ElementWise<uint32_t, Sub>);
  t.Add({ZYDIS_MNEMONIC_PSUBQ, ZYDIS_MNEMONIC_VPSUBQ}, ElementWise<uint64_t, Sub>);
  t.Add({ZYDIS_MNEMONIC_PADDSB, ZYDIS_MNEMONIC_VPADDSB}, ElementWise<int8_t, AddSaturate>);
  t.Add({ZYDIS_MNEMONIC_PADDSW, ZYDIS_MNEMONIC_VPADDSW}, ElementWise<int16_t, AddSaturate>);
  t.Add({ZYDIS_MNEMONIC_PADDUSB, ZYDIS_MNEMONIC_VPADDUSB}, ElementWise<uint8_t, AddSaturate>);
  t.Add({ZYDIS_MNEMONIC_PADDUSW, ZYDIS_MNEMONIC_VPADDUSW}, ElementWise<uint16_t, AddSaturate>);
  t.Add({ZYDIS_MNEMONIC_PSUBSB, ZYDIS_MNEMONIC_VPSUBSB}, ElementWise<int8_t, SubSaturate>);
  t.Add({ZYDIS_MNEMONIC_PSUBSW, ZYDIS_MNEMONIC_VPSUBSW}, ElementWise<int16_t, SubSaturate>);
  t.Add({ZYDIS_MNEMONIC_PSUBUSB, ZYDIS_MNEMONIC_VPSUBUSB}, ElementWise<uint8_t, SubSaturate>);
  t.Add({ZYDIS_MNEMONIC_PSUBUSW, ZYDIS_MNEMONIC_VPSUBUSW}, ElementWise<uint16_t, SubSaturate>);
  t.Add({ZYDIS_MNEMONIC_PAVGB, ZYDIS_MNEMONIC_VPAVGB}, ElementWise<uint8_t, Average>);
  t.Add({ZYDIS_MNEMONIC_PAVGW, ZYDIS_MNEMONIC_VPAVGW}, ElementWise<uint16_t, Average>);

  t.Add({ZYDIS_MNEMONIC_PMINUB, ZYDIS_MNEMONIC_VPMINUB}, ElementWise<uint8_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMINUW, ZYDIS_MNEMONIC_VPMINUW}, ElementWise<uint16_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMINUD, ZYDIS_MNEMONIC_VPMINUD}, ElementWise<uint32_t, Min>);
  t.Add({ZYDIS_MNEMONIC_VPMINUQ}, ElementWise<uint64_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMINSB, ZYDIS_MNEMONIC_VPMINSB}, ElementWise<int8_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMINSW, ZYDIS_MNEMONIC_VPMINSW}, ElementWise<int16_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMINSD, ZYDIS_MNEMONIC_VPMINSD}, ElementWise<int32_t, Min>);
  t.Add({ZYDIS_MNEMONIC_VPMINSQ}, ElementWise<int64_t, Min>);
  t.Add({ZYDIS_MNEMONIC_PMAXUB, ZYDIS_MNEMONIC_VPMAXUB}, ElementWise<uint8_t, Max>);
  t.Add({ZYDIS_MNEMONIC_PMAXUW, ZYDIS_MNEMONIC_VPMAXUW}, ElementWise<uint16_t, Max>);
  t.Add({ZYDIS_MNEMONIC_PMAXUD, ZYDIS_MNEMONIC_VPMAXUD}, ElementWise<uint32_t, Max>);
  t.Add({ZYDIS_MNEMONIC_VPMAXUQ}, ElementWise<uint64_t, Max>);
  t.Add({ZYDIS_MNEMONIC_PMAXSB, ZYDIS_MNEMONIC_VPMAXSB}, ElementWise<int8_t, Max>);
  t.Add({ZYDIS_MNEMONIC_PMAXSW, ZYDIS_MNEMONIC_VPMAXSW}, ElementWise<int16_t, Max>);
  t.Add({ZYDIS_MNEMONIC_PMAXSD, ZYDIS_MNEMONIC_VPMAXSD}, ElementWise<int32_t, Max>);
  t.Add({ZYDIS_MNEMONIC_VPMAXSQ}, ElementWise<int64_t, Max>);

  t.Add({ZYDIS_MNEMONIC_PMULLW, ZYDIS_MNEMONIC_VPMULLW}, ElementWise<uint16_t, MultiplyLow>);
  t.Add({ZYDIS_MNEMONIC_PMULLD, ZYDIS_MNEMONIC_VPMULLD}, ElementWise<uint32_t, MultiplyLow>);
  t.Add({ZYDIS_MNEMONIC_VPMULLQ}, ElementWise<uint64_t, MultiplyLow>);
  t.Add({ZYDIS_MNEMONIC_PMULHW, ZYDIS_MNEMONIC_VPMULHW}, ElementWise<int16_t, MultiplyHigh>);
  t.Add({ZYDIS_MNEMONIC_PMULHUW, ZYDIS_MNEMONIC_VPMULHUW}, ElementWise<uint16_t, MultiplyHigh>);
  t.Add({ZYDIS_MNEMONIC_PMULUDQ, ZYDIS_MNEMONIC_VPMULUDQ},
        ElementWise<uint64_t, MultiplyEvenUnsigned>);
  t.Add({ZYDIS_MNEMONIC_PMULDQ, ZYDIS_MNEMONIC_VPMULDQ}, ElementWise<uint64_t, MultiplyEvenSigned>);
  t.Add({ZYDIS_MNEMONIC_PMADDWD, ZYDIS_MNEMONIC_VPMADDWD}, ElementWise<uint32_t, MultiplyAddWords>);
  t.Add({ZYDIS_MNEMONIC_PSADBW, ZYDIS_MNEMONIC_VPSADBW},
        ElementWise<uint64_t, SumAbsoluteDifferences>);

  // Bitwise: the q forms of the unmasked encodings (element size only matters under a mask).
  t.Add({ZYDIS_MNEMONIC_PAND, ZYDIS_MNEMONIC_VPAND, ZYDIS_MNEMONIC_VPANDQ, ZYDIS_MNEMONIC_ANDPD,
         ZYDIS_MNEMONIC_VANDPD},
        ElementWise<uint64_t, And>);
  t.Add({ZYDIS_MNEMONIC_VPANDD, ZYDIS_MNEMONIC_ANDPS, ZYDIS_MNEMONIC_VANDPS},
        ElementWise<uint32_t, And>);
  t.Add({ZYDIS_MNEMONIC_PANDN, ZYDIS_MNEMONIC_VPANDN, ZYDIS_MNEMONIC_VPANDNQ, ZYDIS_MNEMONIC_ANDNPD,
         ZYDIS_MNEMONIC_VANDNPD},
        ElementWise<uint64_t, AndNot>);
  t.Add({ZYDIS_MNEMONIC_VPANDND, ZYDIS_MNEMONIC_ANDNPS, ZYDIS_MNEMONIC_VANDNPS},
        ElementWise<uint32_t, AndNot>);
  t.Add({ZYDIS_MNEMONIC_POR, ZYDIS_MNEMONIC_VPOR, ZYDIS_MNEMONIC_VPORQ, ZYDIS_MNEMONIC_ORPD,
         ZYDIS_MNEMONIC_VORPD},
        ElementWise<uint64_t, Or>);
  t.Add({ZYDIS_MNEMONIC_VPORD, ZYDIS_MNEMONIC_ORPS, ZYDIS_MNEMONIC_VORPS},
        ElementWise<uint32_t, Or>);
  t.Add({ZYDIS_MNEMONIC_PXOR, ZYDIS_MNEMONIC_VPXOR, ZYDIS_MNEMONIC_VPXORQ, ZYDIS_MNEMONIC_XORPD,
         ZYDIS_MNEMONIC_VXORPD},
        ElementWise<uint64_t, Xor>);
  t.Add({ZYDIS_MNEMONIC_VPXORD, ZYDIS_MNEMONIC_XORPS, ZYDIS_MNEMONIC_VXORPS},
        ElementWise<uint32_t, Xor>);
  t.Add({ZYDIS_MNEMONIC_VPTERNLOGD}, TernaryLogic<uint32_t>);
  t.Add({ZYDIS_MNEMONIC_VPTERNLOGQ}, TernaryLogic<uint64_t>);

  t.Add({ZYDIS_MNEMONIC_PSIGNB, ZYDIS_MNEMONIC_VPSIGNB}, ElementWise<int8_t, Sign>);
  t.Add({ZYDIS_MNEMONIC_PSIGNW, ZYDIS_MNEMONIC_VPSIGNW}, ElementWise<int16_t, Sign>);
  t.Add({ZYDIS_MNEMONIC_PSIGND, ZYDIS_MNEMONIC_VPSIGND}, ElementWise<int32_t, Sign>);
  t.Add({ZYDIS_MNEMONIC_PABSB, ZYDIS_MNEMONIC_VPABSB}, Unary<int8_t, Absolute>);
  t.Add({ZYDIS_MNEMONIC_PABSW, ZYDIS_MNEMONIC_VPABSW}, Unary<int16_t, Absolute>);
  t.Add({ZYDIS_MNEMONIC_PABSD, ZYDIS_MNEMONIC_VPABSD}, Unary<int32_t, Absolute>);
  t.Add({ZYDIS_MNEMONIC_VPABSQ}, Unary<int64_t, Absolute>);

  t.Add({ZYDIS_MNEMONIC_PSLLW, ZYDIS_MNEMONIC_VPSLLW}, UniformShift<uint16_t, ShiftKind::kLeft>);
  t.Add({ZYDIS_MNEMONIC_PSLLD, ZYDIS_MNEMONIC_VPSLLD}, UniformShift<uint32_t, ShiftKind::kLeft>);
  t.Add({ZYDIS_MNEMONIC_PSLLQ, ZYDIS_MNEMONIC_VPSLLQ}, UniformShift<uint64_t, ShiftKind::kLeft>);
  t.Add({ZYDIS_MNEMONIC_PSRLW, ZYDIS_MNEMONIC_VPSRLW}, UniformShift<uint16_t, ShiftKind::kRight>);
  t.Add({ZYDIS_MNEMONIC_PSRLD, ZYDIS_MNEMONIC_VPSRLD}, UniformShift<uint32_t, ShiftKind::kRight>);
  t.Add({ZYDIS_MNEMONIC_PSRLQ, ZYDIS_MNEMONIC_VPSRLQ}, UniformShift<uint64_t, ShiftKind::kRight>);
  t.Add({ZYDIS_MNEMONIC_PSRAW, ZYDIS_MNEMONIC_VPSRAW},
        UniformShift<uint16_t, ShiftKind::kArithmetic>);
  t.Add({ZYDIS_MNEMONIC_PSRAD, ZYDIS_MNEMONIC_VPSRAD},
        UniformShift<uint32_t, ShiftKind::kArithmetic>);
  t.Add({ZYDIS_MNEMONIC_VPSRAQ}, UniformShift<uint64_t, ShiftKind::kArithmetic>);
  t.Add({ZYDIS_MNEMONIC_VPSLLVD}, ElementWise<uint32_t, ShiftLeftBy>);
  t.Add({ZYDIS_MNEMONIC_VPSLLVQ}, ElementWise<uint64_t, ShiftLeftBy>);
  t.Add({ZYDIS_MNEMONIC_VPSRLVD}, ElementWise<uint32_t, ShiftRightBy>);
  t.Add({ZYDIS_MNEMONIC_VPSRLVQ}, ElementWise<uint64_t, ShiftRightBy>);
  t.Add({ZYDIS_MNEMONIC_VPSRAVD}, ElementWise<uint32_t, ShiftArithmeticBy>);
  t.Add({ZYDIS_MNEMONIC_VPSRAVQ}, ElementWise<uint64_t, ShiftArithmeticBy>);
  t.Add({ZYDIS_MNEMONIC_PSLLDQ, ZYDIS_MNEMONIC_VPSLLDQ}, LaneByteShift<true>);
  t.Add({ZYDIS_MNEMONIC_PSRLDQ, ZYDIS_MNEMONIC_VPSRLDQ}, LaneByteShift<false>);
}

}  // namespace pathprof::emulator
