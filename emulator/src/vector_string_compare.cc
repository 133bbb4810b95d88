// SSE4.2 packed string compares: pcmpistri, pcmpistrm, pcmpestri, pcmpestrm (and VEX forms),
// which glibc's strspn/strcspn/strpbrk retire. Their imm8 selects among byte/word, signed/
// unsigned, four aggregations, polarities and outputs; rather than re-deriving that logic,
// each is run on the host (the tracer runs on the CPU the target runs on), from a table with
// one instance per imm8 value since the imm8 is part of the instruction.
#include <immintrin.h>

#include <array>
#include <utility>

#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

struct StringCompareResult {
  uint32_t index = 0;  // pcmp?stri: ecx
  Vector mask;         // pcmp?strm: xmm0
  uint64_t flags = 0;  // CF, ZF, SF, OF; AF and PF cleared
};

__m128i Load(const Vector& v) {
  return _mm_load_si128(reinterpret_cast<const __m128i*>(v.b));
}

uint64_t FlagsOf(bool cf, bool zf, bool sf, bool of) {
  return (cf ? kCF : 0) | (zf ? kZF : 0) | (sf ? kSF : 0) | (of ? kOF : 0);
}

// The lengths of pcmpestr*: eax and edx as given (the instruction takes their absolute value,
// saturated to the element count).
template <int kImm>
StringCompareResult ImplicitIndex(const Vector& x, const Vector& y, uint32_t, uint32_t) {
  const __m128i a = Load(x), b = Load(y);
  StringCompareResult r;
  bool cf, zf, sf, of;
  asm volatile("pcmpistri %[imm], %[b], %[a]"
               : "=c"(r.index), "=@ccc"(cf), "=@ccz"(zf), "=@ccs"(sf), "=@cco"(of)
               : [a] "x"(a), [b] "x"(b), [imm] "i"(kImm));
  r.flags = FlagsOf(cf, zf, sf, of);
  return r;
}

template <int kImm>
StringCompareResult ImplicitMask(const Vector& x, const Vector& y, uint32_t, uint32_t) {
  const __m128i a = Load(x), b = Load(y);
  StringCompareResult r;
  bool cf, zf, sf, of;
  __m128i mask;
  asm volatile("pcmpistrm %[imm], %[b], %[a]"
               : "=Yz"(mask), "=@ccc"(cf), "=@ccz"(zf), "=@ccs"(sf), "=@cco"(of)
               : [a] "x"(a), [b] "x"(b), [imm] "i"(kImm));
  _mm_store_si128(reinterpret_cast<__m128i*>(r.mask.b), mask);
  r.flags = FlagsOf(cf, zf, sf, of);
  return r;
}

template <int kImm>
StringCompareResult ExplicitIndex(const Vector& x, const Vector& y, uint32_t la, uint32_t lb) {
  const __m128i a = Load(x), b = Load(y);
  StringCompareResult r;
  bool cf, zf, sf, of;
  asm volatile("pcmpestri %[imm], %[b], %[a]"
               : "=c"(r.index), "=@ccc"(cf), "=@ccz"(zf), "=@ccs"(sf), "=@cco"(of)
               : [a] "x"(a), [b] "x"(b), "a"(la), "d"(lb), [imm] "i"(kImm));
  r.flags = FlagsOf(cf, zf, sf, of);
  return r;
}

template <int kImm>
StringCompareResult ExplicitMask(const Vector& x, const Vector& y, uint32_t la, uint32_t lb) {
  const __m128i a = Load(x), b = Load(y);
  StringCompareResult r;
  bool cf, zf, sf, of;
  __m128i mask;
  asm volatile("pcmpestrm %[imm], %[b], %[a]"
               : "=Yz"(mask), "=@ccc"(cf), "=@ccz"(zf), "=@ccs"(sf), "=@cco"(of)
               : [a] "x"(a), [b] "x"(b), "a"(la), "d"(lb), [imm] "i"(kImm));
  _mm_store_si128(reinterpret_cast<__m128i*>(r.mask.b), mask);
  r.flags = FlagsOf(cf, zf, sf, of);
  return r;
}

using HostCompare = StringCompareResult (*)(const Vector&, const Vector&, uint32_t, uint32_t);
// imm8 bit 7 is reserved: the table covers 0-127 and anything else is left unmodelled.
constexpr unsigned kImmediates = 128;

template <size_t... I>
constexpr std::array<std::array<HostCompare, kImmediates>, 4> MakeTables(
    std::index_sequence<I...>) {
  return {{{ImplicitIndex<static_cast<int>(I)>...},
           {ImplicitMask<static_cast<int>(I)>...},
           {ExplicitIndex<static_cast<int>(I)>...},
           {ExplicitMask<static_cast<int>(I)>...}}};
}

constexpr auto kTables = MakeTables(std::make_index_sequence<kImmediates>{});

// An explicit length (eax/edx, or rax/rdx with REX.W) as the instruction uses it: its
// absolute value saturated to the element count, which the 32-bit host form then takes as is.
uint32_t ExplicitLength(uint64_t reg, bool wide, unsigned elements) {
  const int64_t v = wide ? static_cast<int64_t>(reg) : static_cast<int32_t>(reg);
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return static_cast<uint32_t>(magnitude < elements ? magnitude : elements);
}

Step StringCompare(Machine& m, const DecodedInstruction& d) {
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const bool mask_output = mn == ZYDIS_MNEMONIC_PCMPISTRM || mn == ZYDIS_MNEMONIC_VPCMPISTRM ||
                           mn == ZYDIS_MNEMONIC_PCMPESTRM || mn == ZYDIS_MNEMONIC_VPCMPESTRM;
  const bool explicit_lengths = mn == ZYDIS_MNEMONIC_PCMPESTRI || mn == ZYDIS_MNEMONIC_VPCMPESTRI ||
                                mn == ZYDIS_MNEMONIC_PCMPESTRM || mn == ZYDIS_MNEMONIC_VPCMPESTRM;
  const unsigned imm = static_cast<unsigned>(d.op[2].imm & 0xff);
  if (imm >= kImmediates) return m.End(EmulationEnd::kUnmodelled);
  Vector a, b;
  if (!ReadVectorSource(m, d, d.op[0], 16, &a) || !ReadVectorSource(m, d, d.op[1], 16, &b))
    return Step::kEnded;
  uint32_t la = 0, lb = 0;
  if (explicit_lengths) {
    const unsigned elements = (imm & 1) ? 8 : 16;
    const bool wide = d.operand_size == 8;
    la = ExplicitLength(m.s.gpr[kRax], wide, elements);
    lb = ExplicitLength(m.s.gpr[kRdx], wide, elements);
  }
  const unsigned variant = (explicit_lengths ? 2 : 0) + (mask_output ? 1 : 0);
  const StringCompareResult r = kTables[variant][imm](a, b, la, lb);
  if (mask_output) {
    WriteVectorRegister(m, d, 0, r.mask, 16);
  } else {
    WriteGpr(m, RegRef{RegClass::kGpr, kRcx, 4, 0}, r.index);  // zero-extended into rcx
  }
  SetArithmeticFlags(m, r.flags);
  return Step::kNext;
}

}  // namespace

void AddStringCompares(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_PCMPISTRI, ZYDIS_MNEMONIC_VPCMPISTRI, ZYDIS_MNEMONIC_PCMPISTRM,
         ZYDIS_MNEMONIC_VPCMPISTRM, ZYDIS_MNEMONIC_PCMPESTRI, ZYDIS_MNEMONIC_VPCMPESTRI,
         ZYDIS_MNEMONIC_PCMPESTRM, ZYDIS_MNEMONIC_VPCMPESTRM},
        StringCompare);
}

}  // namespace pathprof::emulator
