// Every statement here is `asm volatile`: the compiler must neither move an operation out of
// the GuestFloatingPointScope that surrounds it nor merge two of them. The instructions are
// written as text, so this file needs no target attributes: a VEX-only form (vcmpss with
// predicates 8-31, FMA) is only reached when the guest ran that form, on this same CPU.
#include "host_floating_point.h"

#include <immintrin.h>

#include <array>
#include <utility>

#include "machine.h"

namespace pathprof::emulator {
namespace {

// clang-format off
__m128i In(uint32_t v) { return _mm_cvtsi32_si128(static_cast<int>(v)); }
__m128i In(uint64_t v) { return _mm_cvtsi64_si128(static_cast<long long>(v)); }
uint32_t Out32(__m128i v) { return static_cast<uint32_t>(_mm_cvtsi128_si32(v)); }
uint64_t Out64(__m128i v) { return static_cast<uint64_t>(_mm_cvtsi128_si64(v)); }
// clang-format on

template <int kPredicate>
bool CompareSingle(uint32_t a, uint32_t b) {
  __m128i x = In(a);
  const __m128i y = In(b);
  if constexpr (kPredicate < 8)
    asm volatile("cmpss %[p], %[y], %[x]" : [x] "+x"(x) : [y] "x"(y), [p] "i"(kPredicate));
  else
    asm volatile("vcmpss %[p], %[y], %[x], %[x]" : [x] "+x"(x) : [y] "x"(y), [p] "i"(kPredicate));
  return Out32(x) != 0;
}

template <int kPredicate>
bool CompareDouble(uint64_t a, uint64_t b) {
  __m128i x = In(a);
  const __m128i y = In(b);
  if constexpr (kPredicate < 8)
    asm volatile("cmpsd %[p], %[y], %[x]" : [x] "+x"(x) : [y] "x"(y), [p] "i"(kPredicate));
  else
    asm volatile("vcmpsd %[p], %[y], %[x], %[x]" : [x] "+x"(x) : [y] "x"(y), [p] "i"(kPredicate));
  return Out64(x) != 0;
}

template <int kImm>
uint32_t RoundSingle(uint32_t a) {
  __m128i x = In(a);
  asm volatile("roundss %[i], %[x], %[x]" : [x] "+x"(x) : [i] "i"(kImm));
  return Out32(x);
}

template <int kImm>
uint64_t RoundDouble(uint64_t a) {
  __m128i x = In(a);
  asm volatile("roundsd %[i], %[x], %[x]" : [x] "+x"(x) : [i] "i"(kImm));
  return Out64(x);
}

template <size_t... I>
constexpr std::array<bool (*)(uint32_t, uint32_t), 32> SingleCompares(std::index_sequence<I...>) {
  return {CompareSingle<static_cast<int>(I)>...};
}
template <size_t... I>
constexpr std::array<bool (*)(uint64_t, uint64_t), 32> DoubleCompares(std::index_sequence<I...>) {
  return {CompareDouble<static_cast<int>(I)>...};
}
template <size_t... I>
constexpr std::array<uint32_t (*)(uint32_t), 16> SingleRounds(std::index_sequence<I...>) {
  return {RoundSingle<static_cast<int>(I)>...};
}
template <size_t... I>
constexpr std::array<uint64_t (*)(uint64_t), 16> DoubleRounds(std::index_sequence<I...>) {
  return {RoundDouble<static_cast<int>(I)>...};
}

uint64_t FlagsOf(bool zf, bool pf, bool cf) {
  return (zf ? kZF : 0) | (pf ? kPF : 0) | (cf ? kCF : 0);
}

}  // namespace

GuestFloatingPointScope::GuestFloatingPointScope(uint32_t guest_mxcsr) {
  const uint32_t load = (guest_mxcsr & kMxcsrDefined & ~kMxcsrFlags) | kMxcsrMasks;
  asm volatile("stmxcsr %0" : "=m"(host_mxcsr_));
  asm volatile("ldmxcsr %0" : : "m"(load));
}

GuestFloatingPointScope::~GuestFloatingPointScope() {
  asm volatile("ldmxcsr %0" : : "m"(host_mxcsr_));
}

uint32_t GuestFloatingPointScope::Raised() const {
  uint32_t now = 0;
  asm volatile("stmxcsr %0" : "=m"(now));
  return now & kMxcsrFlags;
}

// clang-format off
uint32_t HostArithmetic(FpOp op, uint32_t a, uint32_t b) {
  __m128i x = In(a);
  const __m128i y = In(b);
  switch (op) {
    case FpOp::kAdd: asm volatile("addss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kSub: asm volatile("subss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMul: asm volatile("mulss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kDiv: asm volatile("divss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMin: asm volatile("minss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMax: asm volatile("maxss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kSqrt: asm volatile("sqrtss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kRcp: asm volatile("rcpss %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kRsqrt: asm volatile("rsqrtss %1, %0" : "+x"(x) : "x"(y)); break;
  }
  return Out32(x);
}

uint64_t HostArithmetic(FpOp op, uint64_t a, uint64_t b) {
  __m128i x = In(a);
  const __m128i y = In(b);
  switch (op) {
    case FpOp::kAdd: asm volatile("addsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kSub: asm volatile("subsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMul: asm volatile("mulsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kDiv: asm volatile("divsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMin: asm volatile("minsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kMax: asm volatile("maxsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kSqrt: asm volatile("sqrtsd %1, %0" : "+x"(x) : "x"(y)); break;
    case FpOp::kRcp:
    case FpOp::kRsqrt: break;  // no double-precision forms
  }
  return Out64(x);
}
// clang-format on

bool HostCompare(unsigned predicate, uint32_t a, uint32_t b) {
  static constexpr auto kTable = SingleCompares(std::make_index_sequence<32>{});
  return kTable[predicate & 31](a, b);
}

bool HostCompare(unsigned predicate, uint64_t a, uint64_t b) {
  static constexpr auto kTable = DoubleCompares(std::make_index_sequence<32>{});
  return kTable[predicate & 31](a, b);
}

uint64_t HostOrderedCompare(bool signaling, uint32_t a, uint32_t b) {
  const __m128i x = In(a), y = In(b);
  bool zf, pf, cf;
  if (signaling)
    asm volatile("comiss %[y], %[x]"
                 : "=@ccz"(zf), "=@ccp"(pf), "=@ccc"(cf)
                 : [x] "x"(x), [y] "x"(y));
  else
    asm volatile("ucomiss %[y], %[x]"
                 : "=@ccz"(zf), "=@ccp"(pf), "=@ccc"(cf)
                 : [x] "x"(x), [y] "x"(y));
  return FlagsOf(zf, pf, cf);
}

uint64_t HostOrderedCompare(bool signaling, uint64_t a, uint64_t b) {
  const __m128i x = In(a), y = In(b);
  bool zf, pf, cf;
  if (signaling)
    asm volatile("comisd %[y], %[x]"
                 : "=@ccz"(zf), "=@ccp"(pf), "=@ccc"(cf)
                 : [x] "x"(x), [y] "x"(y));
  else
    asm volatile("ucomisd %[y], %[x]"
                 : "=@ccz"(zf), "=@ccp"(pf), "=@ccc"(cf)
                 : [x] "x"(x), [y] "x"(y));
  return FlagsOf(zf, pf, cf);
}

uint32_t HostRound(unsigned imm, uint32_t a) {
  static constexpr auto kTable = SingleRounds(std::make_index_sequence<16>{});
  return kTable[imm & 15](a);
}

uint64_t HostRound(unsigned imm, uint64_t a) {
  static constexpr auto kTable = DoubleRounds(std::make_index_sequence<16>{});
  return kTable[imm & 15](a);
}

uint64_t HostConvert(FpConversion conversion, uint64_t bits) {
  __m128i r = _mm_setzero_si128();
  const __m128i single = In(static_cast<uint32_t>(bits));
  const __m128i dbl = In(bits);
  const auto i32 = static_cast<int32_t>(bits);
  const auto i64 = static_cast<int64_t>(bits);
  int32_t o32 = 0;
  int64_t o64 = 0;
  switch (conversion) {
    case FpConversion::kSingleToDouble:
      asm volatile("cvtss2sd %1, %0" : "+x"(r) : "x"(single));
      return Out64(r);
    case FpConversion::kDoubleToSingle:
      asm volatile("cvtsd2ss %1, %0" : "+x"(r) : "x"(dbl));
      return Out32(r);
    case FpConversion::kInt32ToSingle:
      asm volatile("cvtsi2ssl %1, %0" : "+x"(r) : "r"(i32));
      return Out32(r);
    case FpConversion::kInt64ToSingle:
      asm volatile("cvtsi2ssq %1, %0" : "+x"(r) : "r"(i64));
      return Out32(r);
    case FpConversion::kInt32ToDouble:
      asm volatile("cvtsi2sdl %1, %0" : "+x"(r) : "r"(i32));
      return Out64(r);
    case FpConversion::kInt64ToDouble:
      asm volatile("cvtsi2sdq %1, %0" : "+x"(r) : "r"(i64));
      return Out64(r);
    case FpConversion::kSingleToInt32:
      asm volatile("cvtss2si %1, %0" : "=r"(o32) : "x"(single));
      return static_cast<uint32_t>(o32);
    case FpConversion::kSingleToInt64:
      asm volatile("cvtss2si %1, %0" : "=r"(o64) : "x"(single));
      return static_cast<uint64_t>(o64);
    case FpConversion::kSingleToInt32Truncated:
      asm volatile("cvttss2si %1, %0" : "=r"(o32) : "x"(single));
      return static_cast<uint32_t>(o32);
    case FpConversion::kSingleToInt64Truncated:
      asm volatile("cvttss2si %1, %0" : "=r"(o64) : "x"(single));
      return static_cast<uint64_t>(o64);
    case FpConversion::kDoubleToInt32:
      asm volatile("cvtsd2si %1, %0" : "=r"(o32) : "x"(dbl));
      return static_cast<uint32_t>(o32);
    case FpConversion::kDoubleToInt64:
      asm volatile("cvtsd2si %1, %0" : "=r"(o64) : "x"(dbl));
      return static_cast<uint64_t>(o64);
    case FpConversion::kDoubleToInt32Truncated:
      asm volatile("cvttsd2si %1, %0" : "=r"(o32) : "x"(dbl));
      return static_cast<uint32_t>(o32);
    case FpConversion::kDoubleToInt64Truncated:
      asm volatile("cvttsd2si %1, %0" : "=r"(o64) : "x"(dbl));
      return static_cast<uint64_t>(o64);
  }
  return 0;
}

// One host instruction per kind, order and precision: "vfmadd132sd c, b, dst" in AT&T order.
#define PATHPROF_FMA(name) \
  asm volatile(name " %[c], %[b], %[x]" : [x] "+x"(x) : [b] "x"(y), [c] "x"(z))
#define PATHPROF_FMA_ORDERS(stem, suffix) \
  switch (order) {                        \
    case FmaOrder::k132:                  \
      PATHPROF_FMA(stem "132" suffix);    \
      break;                              \
    case FmaOrder::k213:                  \
      PATHPROF_FMA(stem "213" suffix);    \
      break;                              \
    case FmaOrder::k231:                  \
      PATHPROF_FMA(stem "231" suffix);    \
      break;                              \
  }

uint32_t HostFusedMultiplyAdd(FmaKind kind, FmaOrder order, uint32_t dst, uint32_t b, uint32_t c) {
  __m128i x = In(dst);
  const __m128i y = In(b), z = In(c);
  switch (kind) {
    case FmaKind::kMultiplyAdd:
      PATHPROF_FMA_ORDERS("vfmadd", "ss");
      break;
    case FmaKind::kMultiplySubtract:
      PATHPROF_FMA_ORDERS("vfmsub", "ss");
      break;
    case FmaKind::kNegatedMultiplyAdd:
      PATHPROF_FMA_ORDERS("vfnmadd", "ss");
      break;
    case FmaKind::kNegatedMultiplySubtract:
      PATHPROF_FMA_ORDERS("vfnmsub", "ss");
      break;
  }
  return Out32(x);
}

uint64_t HostFusedMultiplyAdd(FmaKind kind, FmaOrder order, uint64_t dst, uint64_t b, uint64_t c) {
  __m128i x = In(dst);
  const __m128i y = In(b), z = In(c);
  switch (kind) {
    case FmaKind::kMultiplyAdd:
      PATHPROF_FMA_ORDERS("vfmadd", "sd");
      break;
    case FmaKind::kMultiplySubtract:
      PATHPROF_FMA_ORDERS("vfmsub", "sd");
      break;
    case FmaKind::kNegatedMultiplyAdd:
      PATHPROF_FMA_ORDERS("vfnmadd", "sd");
      break;
    case FmaKind::kNegatedMultiplySubtract:
      PATHPROF_FMA_ORDERS("vfnmsub", "sd");
      break;
  }
  return Out64(x);
}

#undef PATHPROF_FMA_ORDERS
#undef PATHPROF_FMA

}  // namespace pathprof::emulator
