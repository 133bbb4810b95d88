// Floating-point conversions: between single and double, from and to 32/64-bit integers
// (with MXCSR rounding or truncating), scalar and packed, legacy SSE and VEX/EVEX. Each element
// is converted on the host under the guest's MXCSR, so out-of-range values give the CPU's
// "integer indefinite" and raise the same flags.
#include <algorithm>

#include "floating_point_exceptions.h"
#include "host_floating_point.h"
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

bool ScalarSelected(const Machine& m, const DecodedInstruction& d) {
  return !d.mask_register || (m.s.k[d.mask_register] & 1);
}

// cvtsi2ss/cvtsi2sd: a 32- or 64-bit integer (register or memory) into element 0.
template <bool kDouble>
Step IntegerToFloat(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  const unsigned size = s.b.type == OperandType::kRegister ? s.b.reg.size : s.b.size;
  if (size != 4 && size != 8) return m.End(EmulationEnd::kUnmodelled);
  uint64_t v = 0;
  Vector r;
  if (!ReadVectorSource(m, d, s.a, 16, &r) || !ReadInt(m, s.b, size, &v)) return Step::kEnded;
  const FpConversion c =
      kDouble ? (size == 8 ? FpConversion::kInt64ToDouble : FpConversion::kInt32ToDouble)
              : (size == 8 ? FpConversion::kInt64ToSingle : FpConversion::kInt32ToSingle);
  const bool computed = RunUnderGuestMxcsr(m, ScalarSelected(m, d) ? 1 : 0, 1, [&](unsigned) {
    if (kDouble)
      r.Set<uint64_t>(0, HostConvert(c, v));
    else
      r.Set<uint32_t>(0, static_cast<uint32_t>(HostConvert(c, v)));
  });
  if (!computed) return Step::kEnded;
  WriteScalarDestination(m, d, s.dst, r, kDouble ? 8 : 4);
  return Step::kNext;
}

// cvtss2si, cvttss2si, cvtsd2si, cvttsd2si: element 0 into a 32- or 64-bit general register.
template <bool kDouble, bool kTruncate>
Step FloatToInteger(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const Operand& dst = d.op[0];
  const unsigned size = dst.reg.size;
  if (dst.type != OperandType::kRegister || (size != 4 && size != 8))
    return m.End(EmulationEnd::kUnmodelled);
  Vector a;
  if (!ReadVectorSource(m, d, d.op[1], kDouble ? 8 : 4, &a)) return Step::kEnded;
  FpConversion c;
  if (kDouble)
    c = size == 8
            ? (kTruncate ? FpConversion::kDoubleToInt64Truncated : FpConversion::kDoubleToInt64)
            : (kTruncate ? FpConversion::kDoubleToInt32Truncated : FpConversion::kDoubleToInt32);
  else
    c = size == 8
            ? (kTruncate ? FpConversion::kSingleToInt64Truncated : FpConversion::kSingleToInt64)
            : (kTruncate ? FpConversion::kSingleToInt32Truncated : FpConversion::kSingleToInt32);
  uint64_t v = 0;
  const bool computed = RunUnderGuestMxcsr(m, 1, 1, [&](unsigned) {
    v = HostConvert(c, kDouble ? a.Get<uint64_t>(0) : a.Get<uint32_t>(0));
  });
  if (!computed) return Step::kEnded;
  WriteGpr(m, dst.reg, v);
  return Step::kNext;
}

// cvtss2sd, cvtsd2ss: element 0 of the second source, the rest from the first.
template <typename From, typename To, FpConversion kConversion>
Step ScalarConvert(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  Vector a, b;
  if (!ReadVectorSource(m, d, s.a, 16, &a) ||
      !ReadVectorSource(m, d, s.b, IsMemory(s.b) ? sizeof(From) : 16, &b))
    return Step::kEnded;
  Vector r = a;
  const bool computed = RunUnderGuestMxcsr(m, ScalarSelected(m, d) ? 1 : 0, 1, [&](unsigned) {
    r.Set<To>(0, static_cast<To>(HostConvert(kConversion, b.Get<From>(0))));
  });
  if (!computed) return Step::kEnded;
  WriteScalarDestination(m, d, s.dst, r, sizeof(To));
  return Step::kNext;
}

// Packed conversions. Widening ones (cvtps2pd, cvtdq2pd) read half the destination's width;
// narrowing ones (cvtpd2ps, cvtpd2dq) fill half of the source's width, and the rest of the
// destination (at least the whole xmm) is zeroed, whatever the opmask says.
template <typename From, typename To, FpConversion kConversion>
Step PackedConvert(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const unsigned width = OperationWidth(d);
  const unsigned n = width / std::max(sizeof(From), sizeof(To));
  const Operand& dst = d.op[0];
  if (!IsVectorRegister(dst)) return m.End(EmulationEnd::kUnmodelled);
  const uint64_t selected = SelectedElements(m, d, n);
  Vector a, r;
  if (!ReadVectorSourceMasked(m, d, d.op[1], n * sizeof(From), sizeof(From), selected, &a))
    return Step::kEnded;
  const bool computed = RunUnderGuestMxcsr(m, selected, n, [&](unsigned i) {
    r.Set<To>(i, static_cast<To>(HostConvert(kConversion, a.Get<From>(i))));
  });
  if (!computed) return Step::kEnded;
  MergeUnselected(m, d, dst.reg.index, sizeof(To), n, &r);
  WriteVectorRegister(m, d, dst.reg.index, r, std::max<unsigned>(16, n * sizeof(To)));
  return Step::kNext;
}

}  // namespace

void AddFloatingPointConversions(VectorHandlers& t) {
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSI2SS, ZYDIS_MNEMONIC_VCVTSI2SS}, IntegerToFloat<false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSI2SD, ZYDIS_MNEMONIC_VCVTSI2SD}, IntegerToFloat<true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSS2SI, ZYDIS_MNEMONIC_VCVTSS2SI},
                     FloatToInteger<false, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTTSS2SI, ZYDIS_MNEMONIC_VCVTTSS2SI},
                     FloatToInteger<false, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSD2SI, ZYDIS_MNEMONIC_VCVTSD2SI},
                     FloatToInteger<true, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTTSD2SI, ZYDIS_MNEMONIC_VCVTTSD2SI},
                     FloatToInteger<true, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSS2SD, ZYDIS_MNEMONIC_VCVTSS2SD},
                     ScalarConvert<uint32_t, uint64_t, FpConversion::kSingleToDouble>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTSD2SS, ZYDIS_MNEMONIC_VCVTSD2SS},
                     ScalarConvert<uint64_t, uint32_t, FpConversion::kDoubleToSingle>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTPS2PD, ZYDIS_MNEMONIC_VCVTPS2PD},
                     PackedConvert<uint32_t, uint64_t, FpConversion::kSingleToDouble>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTPD2PS, ZYDIS_MNEMONIC_VCVTPD2PS},
                     PackedConvert<uint64_t, uint32_t, FpConversion::kDoubleToSingle>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTDQ2PS, ZYDIS_MNEMONIC_VCVTDQ2PS},
                     PackedConvert<uint32_t, uint32_t, FpConversion::kInt32ToSingle>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTDQ2PD, ZYDIS_MNEMONIC_VCVTDQ2PD},
                     PackedConvert<uint32_t, uint64_t, FpConversion::kInt32ToDouble>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTPS2DQ, ZYDIS_MNEMONIC_VCVTPS2DQ},
                     PackedConvert<uint32_t, uint32_t, FpConversion::kSingleToInt32>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTTPS2DQ, ZYDIS_MNEMONIC_VCVTTPS2DQ},
                     PackedConvert<uint32_t, uint32_t, FpConversion::kSingleToInt32Truncated>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTPD2DQ, ZYDIS_MNEMONIC_VCVTPD2DQ},
                     PackedConvert<uint64_t, uint32_t, FpConversion::kDoubleToInt32>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CVTTPD2DQ, ZYDIS_MNEMONIC_VCVTTPD2DQ},
                     PackedConvert<uint64_t, uint32_t, FpConversion::kDoubleToInt32Truncated>);
}

}  // namespace pathprof::emulator
