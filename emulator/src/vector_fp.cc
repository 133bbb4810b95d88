// Floating-point arithmetic, compares and rounding, scalar (ss/sd) and packed (ps/pd), legacy
// SSE, VEX and EVEX: add, sub, mul, div, min, max, sqrt, rcp, rsqrt, cmp with a predicate,
// comis/ucomis (the flags compiled code branches on), round, the FMA family, and ldmxcsr/
// stmxcsr. Each element is computed on the host (host_floating_point.h) under the guest's
// MXCSR. A scalar instruction's other elements come from its first source (legacy: the
// destination itself).
#include <array>
#include <string_view>

#include "floating_point_exceptions.h"
#include "host_floating_point.h"
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

// Element 0 of a scalar EVEX instruction is under the opmask; VEX and legacy always write it.
bool ScalarSelected(const Machine& m, const DecodedInstruction& d) {
  return !d.mask_register || (m.s.k[d.mask_register] & 1);
}

// The two sources of a scalar instruction: the first as a whole xmm (it supplies the upper
// elements), the second as one element (a memory operand is only that wide).
template <typename T>
bool ReadScalarSources(Machine& m, const DecodedInstruction& d, const TwoSources& s, Vector* a,
                       Vector* b) {
  return ReadVectorSource(m, d, s.a, 16, a) &&
         ReadVectorSource(m, d, s.b, IsMemory(s.b) ? sizeof(T) : 16, b);
}

template <typename T, FpOp kOp>
Step ScalarArithmetic(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  Vector a, b;
  if (!ReadScalarSources<T>(m, d, s, &a, &b)) return Step::kEnded;
  Vector r = a;
  const bool computed = RunUnderGuestMxcsr(m, ScalarSelected(m, d) ? 1 : 0, 1, [&](unsigned) {
    r.Set<T>(0, HostArithmetic(kOp, a.Get<T>(0), b.Get<T>(0)));
  });
  if (!computed) return Step::kEnded;
  WriteScalarDestination(m, d, s.dst, r, sizeof(T));
  return Step::kNext;
}

// Packed forms; sqrt, rcp and rsqrt take their one source as `b` (legacy and VEX alike have
// two operands, so SourcesOf puts it there).
template <typename T, FpOp kOp>
Step PackedArithmetic(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  const unsigned width = OperationWidth(d);
  const unsigned n = width / sizeof(T);
  const uint64_t selected = SelectedElements(m, d, n);
  Vector a, b, r;
  if (!ReadVectorSource(m, d, s.a, width, &a) ||
      !ReadVectorSourceMasked(m, d, s.b, width, sizeof(T), selected, &b))
    return Step::kEnded;
  const bool computed = RunUnderGuestMxcsr(m, selected, n, [&](unsigned i) {
    r.Set<T>(i, HostArithmetic(kOp, a.Get<T>(i), b.Get<T>(i)));
  });
  if (!computed) return Step::kEnded;
  return WriteVectorDestination(m, d, s.dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// cmpss/cmpsd/cmpps/cmppd: legacy encodings use imm8 bits 0-2, VEX and EVEX bits 0-4. The
// result is all-ones/zero elements, or (EVEX) bits of an opmask.
template <typename T, bool kScalar>
Step Compare(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  const unsigned predicate = static_cast<unsigned>(s.imm.imm & (d.vex_or_evex ? 31 : 7));
  const unsigned width = kScalar ? 16 : OperationWidth(d);
  const unsigned n = kScalar ? 1 : width / sizeof(T);
  const uint64_t selected = kScalar ? (ScalarSelected(m, d) ? 1 : 0) : SelectedElements(m, d, n);
  Vector a, b;
  const bool read = kScalar ? ReadScalarSources<T>(m, d, s, &a, &b)
                            : ReadVectorSource(m, d, s.a, width, &a) &&
                                  ReadVectorSourceMasked(m, d, s.b, width, sizeof(T), selected, &b);
  if (!read) return Step::kEnded;
  uint64_t bits = 0;
  const bool computed = RunUnderGuestMxcsr(m, selected, n, [&](unsigned i) {
    if (HostCompare(predicate, a.Get<T>(i), b.Get<T>(i))) bits |= 1ull << i;
  });
  if (!computed) return Step::kEnded;
  if (IsMaskRegister(s.dst)) {
    WriteMaskRegister(m, s.dst, bits);  // unselected elements computed nothing: bits clear
    return Step::kNext;
  }
  Vector r = kScalar ? a : Vector{};
  for (unsigned i = 0; i < n; ++i) r.Set<T>(i, ((bits >> i) & 1) ? static_cast<T>(~T{0}) : T{0});
  if (kScalar) {
    WriteScalarDestination(m, d, s.dst, r, sizeof(T));
    return Step::kNext;
  }
  return WriteVectorDestination(m, d, s.dst, r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// comiss/comisd (signaling on QNaN) and ucomiss/ucomisd: ZF, PF, CF from the compare; OF, SF,
// AF cleared.
template <typename T, bool kSignaling>
Step OrderedCompare(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  Vector a, b;
  if (!ReadVectorSource(m, d, d.op[0], sizeof(T), &a) ||
      !ReadVectorSource(m, d, d.op[1], sizeof(T), &b))
    return Step::kEnded;
  uint64_t flags = 0;
  const bool computed = RunUnderGuestMxcsr(
      m, 1, 1, [&](unsigned) { flags = HostOrderedCompare(kSignaling, a.Get<T>(0), b.Get<T>(0)); });
  if (!computed) return Step::kEnded;
  SetArithmeticFlags(m, flags);
  return Step::kNext;
}

// roundss/roundsd (scalar layout) and roundps/roundpd (one source, then imm8).
template <typename T, bool kScalar>
Step Round(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const TwoSources s = SourcesOf(d);
  const Operand& imm = kScalar ? s.imm : d.op[2];
  if (imm.type != OperandType::kImmediate || (imm.imm & 0xf0))
    return m.End(EmulationEnd::kUnmodelled);  // reserved imm8 bits
  const unsigned control = static_cast<unsigned>(imm.imm & 15);
  const unsigned width = kScalar ? 16 : OperationWidth(d);
  const unsigned n = kScalar ? 1 : width / sizeof(T);
  Vector a, b;
  const bool read =
      kScalar ? ReadScalarSources<T>(m, d, s, &a, &b) : ReadVectorSource(m, d, d.op[1], width, &b);
  if (!read) return Step::kEnded;
  Vector r = kScalar ? a : Vector{};
  const bool computed = RunUnderGuestMxcsr(
      m, LowBits(n), n, [&](unsigned i) { r.Set<T>(i, HostRound(control, b.Get<T>(i))); });
  if (!computed) return Step::kEnded;
  if (kScalar) {
    WriteScalarDestination(m, d, s.dst, r, sizeof(T));
    return Step::kNext;
  }
  return WriteVectorDestination(m, d, d.op[0], r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

// The FMA family, parsed once from the mnemonic's name: vf[n]m(add|sub)(132|213|231)(ss|sd|
// ps|pd). The alternating vfmaddsub/vfmsubadd do not parse and stay unmodelled.
struct FmaShape {
  bool valid = false;
  FmaKind kind = FmaKind::kMultiplyAdd;
  FmaOrder order = FmaOrder::k132;
  bool scalar = false;
  bool is_double = false;
};

FmaShape ParseFma(std::string_view name) {
  FmaShape f;
  struct Stem {
    std::string_view text;
    FmaKind kind;
  };
  static constexpr Stem kStems[] = {{"vfmadd", FmaKind::kMultiplyAdd},
                                    {"vfmsub", FmaKind::kMultiplySubtract},
                                    {"vfnmadd", FmaKind::kNegatedMultiplyAdd},
                                    {"vfnmsub", FmaKind::kNegatedMultiplySubtract}};
  for (const Stem& stem : kStems) {
    if (name.size() != stem.text.size() + 5 || name.substr(0, stem.text.size()) != stem.text)
      continue;
    const std::string_view order = name.substr(stem.text.size(), 3);
    const std::string_view type = name.substr(stem.text.size() + 3);
    if (order == "132")
      f.order = FmaOrder::k132;
    else if (order == "213")
      f.order = FmaOrder::k213;
    else if (order == "231")
      f.order = FmaOrder::k231;
    else
      return f;
    if (type != "ss" && type != "sd" && type != "ps" && type != "pd") return f;
    f.kind = stem.kind;
    f.scalar = type[0] == 's';
    f.is_double = type[1] == 'd';
    f.valid = true;
    return f;
  }
  return f;
}

std::array<FmaShape, ZYDIS_MNEMONIC_MAX_VALUE + 1>& FmaShapes() {
  static std::array<FmaShape, ZYDIS_MNEMONIC_MAX_VALUE + 1> shapes{};
  return shapes;
}

template <typename T>
Step FusedMultiplyAddOf(Machine& m, const DecodedInstruction& d, const FmaShape& f) {
  const unsigned width = f.scalar ? 16 : OperationWidth(d);
  const unsigned n = f.scalar ? 1 : width / sizeof(T);
  const uint64_t selected = f.scalar ? (ScalarSelected(m, d) ? 1 : 0) : SelectedElements(m, d, n);
  Vector a, b, c;
  const unsigned third = f.scalar && IsMemory(d.op[2]) ? sizeof(T) : width;
  if (!ReadVectorSource(m, d, d.op[0], width, &a) || !ReadVectorSource(m, d, d.op[1], width, &b) ||
      !ReadVectorSourceMasked(m, d, d.op[2], third, sizeof(T), f.scalar ? 1 : selected, &c))
    return Step::kEnded;
  Vector r = a;
  const bool computed = RunUnderGuestMxcsr(m, selected, n, [&](unsigned i) {
    r.Set<T>(i, HostFusedMultiplyAdd(f.kind, f.order, a.Get<T>(i), b.Get<T>(i), c.Get<T>(i)));
  });
  if (!computed) return Step::kEnded;
  if (f.scalar) {
    WriteScalarDestination(m, d, d.op[0], r, sizeof(T));
    return Step::kNext;
  }
  return WriteVectorDestination(m, d, d.op[0], r, width, sizeof(T)) ? Step::kNext : Step::kEnded;
}

Step FusedMultiplyAdd(Machine& m, const DecodedInstruction& d) {
  if (!FloatingPointModelled(m)) return Step::kEnded;
  const FmaShape& f = FmaShapes()[d.mnemonic];
  return f.is_double ? FusedMultiplyAddOf<uint64_t>(m, d, f)
                     : FusedMultiplyAddOf<uint32_t>(m, d, f);
}

// ldmxcsr with a bit above 15 set raises #GP (bit 17, misaligned SSE, exists on some AMD
// cores only): left unmodelled rather than guessed.
Step LoadMxcsr(Machine& m, const DecodedInstruction& d) {
  uint64_t v = 0;
  if (!ReadInt(m, d.op[0], 4, &v)) return Step::kEnded;
  if (v & ~uint64_t{kMxcsrDefined}) return m.End(EmulationEnd::kUnmodelled);
  m.s.mxcsr = static_cast<uint32_t>(v);
  return Step::kNext;
}

Step StoreMxcsr(Machine& m, const DecodedInstruction& d) {
  return WriteInt(m, d.op[0], 4, m.s.mxcsr) ? Step::kNext : Step::kEnded;
}

}  // namespace

void AddFloatingPointOps(VectorHandlers& t) {
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ADDSS, ZYDIS_MNEMONIC_VADDSS},
                     ScalarArithmetic<uint32_t, FpOp::kAdd>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ADDSD, ZYDIS_MNEMONIC_VADDSD},
                     ScalarArithmetic<uint64_t, FpOp::kAdd>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SUBSS, ZYDIS_MNEMONIC_VSUBSS},
                     ScalarArithmetic<uint32_t, FpOp::kSub>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SUBSD, ZYDIS_MNEMONIC_VSUBSD},
                     ScalarArithmetic<uint64_t, FpOp::kSub>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MULSS, ZYDIS_MNEMONIC_VMULSS},
                     ScalarArithmetic<uint32_t, FpOp::kMul>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MULSD, ZYDIS_MNEMONIC_VMULSD},
                     ScalarArithmetic<uint64_t, FpOp::kMul>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_DIVSS, ZYDIS_MNEMONIC_VDIVSS},
                     ScalarArithmetic<uint32_t, FpOp::kDiv>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_DIVSD, ZYDIS_MNEMONIC_VDIVSD},
                     ScalarArithmetic<uint64_t, FpOp::kDiv>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MINSS, ZYDIS_MNEMONIC_VMINSS},
                     ScalarArithmetic<uint32_t, FpOp::kMin>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MINSD, ZYDIS_MNEMONIC_VMINSD},
                     ScalarArithmetic<uint64_t, FpOp::kMin>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MAXSS, ZYDIS_MNEMONIC_VMAXSS},
                     ScalarArithmetic<uint32_t, FpOp::kMax>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MAXSD, ZYDIS_MNEMONIC_VMAXSD},
                     ScalarArithmetic<uint64_t, FpOp::kMax>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SQRTSS, ZYDIS_MNEMONIC_VSQRTSS},
                     ScalarArithmetic<uint32_t, FpOp::kSqrt>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SQRTSD, ZYDIS_MNEMONIC_VSQRTSD},
                     ScalarArithmetic<uint64_t, FpOp::kSqrt>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_RCPSS, ZYDIS_MNEMONIC_VRCPSS},
                     ScalarArithmetic<uint32_t, FpOp::kRcp>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_RSQRTSS, ZYDIS_MNEMONIC_VRSQRTSS},
                     ScalarArithmetic<uint32_t, FpOp::kRsqrt>);

  t.AddFloatingPoint({ZYDIS_MNEMONIC_ADDPS, ZYDIS_MNEMONIC_VADDPS},
                     PackedArithmetic<uint32_t, FpOp::kAdd>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ADDPD, ZYDIS_MNEMONIC_VADDPD},
                     PackedArithmetic<uint64_t, FpOp::kAdd>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SUBPS, ZYDIS_MNEMONIC_VSUBPS},
                     PackedArithmetic<uint32_t, FpOp::kSub>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SUBPD, ZYDIS_MNEMONIC_VSUBPD},
                     PackedArithmetic<uint64_t, FpOp::kSub>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MULPS, ZYDIS_MNEMONIC_VMULPS},
                     PackedArithmetic<uint32_t, FpOp::kMul>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MULPD, ZYDIS_MNEMONIC_VMULPD},
                     PackedArithmetic<uint64_t, FpOp::kMul>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_DIVPS, ZYDIS_MNEMONIC_VDIVPS},
                     PackedArithmetic<uint32_t, FpOp::kDiv>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_DIVPD, ZYDIS_MNEMONIC_VDIVPD},
                     PackedArithmetic<uint64_t, FpOp::kDiv>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MINPS, ZYDIS_MNEMONIC_VMINPS},
                     PackedArithmetic<uint32_t, FpOp::kMin>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MINPD, ZYDIS_MNEMONIC_VMINPD},
                     PackedArithmetic<uint64_t, FpOp::kMin>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MAXPS, ZYDIS_MNEMONIC_VMAXPS},
                     PackedArithmetic<uint32_t, FpOp::kMax>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_MAXPD, ZYDIS_MNEMONIC_VMAXPD},
                     PackedArithmetic<uint64_t, FpOp::kMax>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SQRTPS, ZYDIS_MNEMONIC_VSQRTPS},
                     PackedArithmetic<uint32_t, FpOp::kSqrt>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_SQRTPD, ZYDIS_MNEMONIC_VSQRTPD},
                     PackedArithmetic<uint64_t, FpOp::kSqrt>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_RCPPS, ZYDIS_MNEMONIC_VRCPPS},
                     PackedArithmetic<uint32_t, FpOp::kRcp>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_RSQRTPS, ZYDIS_MNEMONIC_VRSQRTPS},
                     PackedArithmetic<uint32_t, FpOp::kRsqrt>);

  t.AddFloatingPoint({ZYDIS_MNEMONIC_CMPSS, ZYDIS_MNEMONIC_VCMPSS}, Compare<uint32_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CMPSD, ZYDIS_MNEMONIC_VCMPSD}, Compare<uint64_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CMPPS, ZYDIS_MNEMONIC_VCMPPS}, Compare<uint32_t, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_CMPPD, ZYDIS_MNEMONIC_VCMPPD}, Compare<uint64_t, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_COMISS, ZYDIS_MNEMONIC_VCOMISS},
                     OrderedCompare<uint32_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_COMISD, ZYDIS_MNEMONIC_VCOMISD},
                     OrderedCompare<uint64_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_UCOMISS, ZYDIS_MNEMONIC_VUCOMISS},
                     OrderedCompare<uint32_t, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_UCOMISD, ZYDIS_MNEMONIC_VUCOMISD},
                     OrderedCompare<uint64_t, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ROUNDSS, ZYDIS_MNEMONIC_VROUNDSS}, Round<uint32_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ROUNDSD, ZYDIS_MNEMONIC_VROUNDSD}, Round<uint64_t, true>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ROUNDPS, ZYDIS_MNEMONIC_VROUNDPS}, Round<uint32_t, false>);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_ROUNDPD, ZYDIS_MNEMONIC_VROUNDPD}, Round<uint64_t, false>);

  auto& shapes = FmaShapes();
  for (unsigned mn = 0; mn <= ZYDIS_MNEMONIC_MAX_VALUE; ++mn) {
    const char* name = ZydisMnemonicGetString(static_cast<ZydisMnemonic>(mn));
    if (!name) continue;
    shapes[mn] = ParseFma(name);
    if (shapes[mn].valid) t.Add({static_cast<ZydisMnemonic>(mn)}, FusedMultiplyAdd);
  }

  t.AddFloatingPoint({ZYDIS_MNEMONIC_LDMXCSR, ZYDIS_MNEMONIC_VLDMXCSR}, LoadMxcsr);
  t.AddFloatingPoint({ZYDIS_MNEMONIC_STMXCSR, ZYDIS_MNEMONIC_VSTMXCSR}, StoreMxcsr);
}

}  // namespace pathprof::emulator
