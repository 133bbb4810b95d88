// Vector instructions one family at a time, against the CPU: every imm8 of the instructions
// whose behaviour the imm8 selects (pcmpistri & co, cmpsd predicates, round, vpternlog,
// vpcmp, palignr, pshufd, shufps), run from generated code; intrinsic kernels for the SSE2,
// SSSE3/SSE4, AVX2 and AVX-512 integer families compiled code and glibc use; and the rules
// around them: which bits a legacy, VEX or EVEX write keeps, alignment faults, masked loads
// next to an unmapped page, and when the vector registers are loaded.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "call_harness.h"

namespace pathprof::emulator {
namespace {

using testing::CallHarness;
using testing::EndText;
using testing::kReturnSentinel;

#define NATIVE extern "C" __attribute__((noinline, no_sanitize("address", "undefined")))
#define NATIVE_FOR(isa) \
  extern "C" __attribute__((noinline, no_sanitize("address", "undefined"), target(isa)))

CallHarness& Harness() {
  static CallHarness harness;
  return harness;
}

bool HasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

constexpr uint64_t kFlagBits = 0x8d5;  // CF PF AF ZF SF OF (pushfq also shows TF when traced)

// --- imm8 sweeps over generated code -------------------------------------------------------

// What a generated routine leaves to compare: xmm0; the flags (pushfq) in rax and the index
// (ecx) in rdx; or an opmask in rax.
enum class Result { kXmm0, kFlags, kFlagsAndIndex, kRax };

// One instruction with its imm8 as the last byte, between a fixed prologue and epilogue.
struct Template {
  const char* name;
  std::vector<uint8_t> prologue;
  std::vector<uint8_t> instruction;  // imm8 appended
  std::vector<uint8_t> epilogue;     // ends with ret
  unsigned imm_count;
  Result result;
};

const std::vector<uint8_t> kFlagsToRax = {0x9c, 0x58};                    // pushfq; pop rax
const std::vector<uint8_t> kIndexToRdx = {0x48, 0x89, 0xca};              // mov rdx, rcx
const std::vector<uint8_t> kKmaskToRax = {0xc4, 0xe1, 0xfb, 0x93, 0xc2};  // kmovq rax, k2
const std::vector<uint8_t> kRdiToKmask = {0xc4, 0xe1, 0xfb, 0x92, 0xcf};  // kmovq k1, rdi
constexpr uint8_t kRet = 0xc3;

std::vector<Template> Templates() {
  auto with_ret = [](std::vector<uint8_t> v) {
    v.push_back(kRet);
    return v;
  };
  std::vector<uint8_t> flags_index = kFlagsToRax;
  flags_index.insert(flags_index.end(), kIndexToRdx.begin(), kIndexToRdx.end());
  const Result x = Result::kXmm0;
  std::vector<Template> t = {
      {"pcmpistri",
       {},
       {0x66, 0x0f, 0x3a, 0x63, 0xc1},
       with_ret(flags_index),
       128,
       Result::kFlagsAndIndex},
      {"pcmpistrm", {}, {0x66, 0x0f, 0x3a, 0x62, 0xc1}, with_ret(kFlagsToRax), 128, Result::kFlags},
      {"pcmpestri",
       {},
       {0x66, 0x0f, 0x3a, 0x61, 0xc1},
       with_ret(flags_index),
       128,
       Result::kFlagsAndIndex},
      {"pcmpestrm", {}, {0x66, 0x0f, 0x3a, 0x60, 0xc1}, with_ret(kFlagsToRax), 128, Result::kFlags},
      {"cmpss", {}, {0xf3, 0x0f, 0xc2, 0xc1}, {kRet}, 256, x},
      {"vcmpsd", {}, {0xc5, 0xfb, 0xc2, 0xc1}, {kRet}, 32, x},
      {"roundsd", {}, {0x66, 0x0f, 0x3a, 0x0b, 0xc1}, {kRet}, 16, x},
      {"roundss", {}, {0x66, 0x0f, 0x3a, 0x0a, 0xc1}, {kRet}, 16, x},
      {"vroundsd", {}, {0xc4, 0xe3, 0x79, 0x0b, 0xc1}, {kRet}, 16, x},
      {"palignr", {}, {0x66, 0x0f, 0x3a, 0x0f, 0xc1}, {kRet}, 40, x},
      {"vpalignr", {}, {0xc4, 0xe3, 0x79, 0x0f, 0xc1}, {kRet}, 40, x},
      {"pshufd", {}, {0x66, 0x0f, 0x70, 0xc1}, {kRet}, 256, x},
      {"shufps", {}, {0x0f, 0xc6, 0xc1}, {kRet}, 256, x},
  };
  if (HasAvx512()) {
    const Result k = Result::kRax;
    const std::vector<Template> evex = {
        {"vpternlogd", {}, {0x62, 0xf3, 0x75, 0x08, 0x25, 0xc2}, {kRet}, 256, x},
        {"vpternlogd{k}{z}", kRdiToKmask, {0x62, 0xf3, 0x75, 0x89, 0x25, 0xc2}, {kRet}, 256, x},
        {"vpternlogq{k}", kRdiToKmask, {0x62, 0xf3, 0xf5, 0x09, 0x25, 0xc2}, {kRet}, 256, x},
        {"vpcmpub", {}, {0x62, 0xf3, 0x7d, 0x08, 0x3e, 0xd1}, with_ret(kKmaskToRax), 8, k},
        {"vpcmpb{k}",
         kRdiToKmask,
         {0x62, 0xf3, 0x7d, 0x09, 0x3f, 0xd1},
         with_ret(kKmaskToRax),
         8,
         k},
        {"vpcmpd", {}, {0x62, 0xf3, 0x7d, 0x08, 0x1f, 0xd1}, with_ret(kKmaskToRax), 8, k},
        {"vpcmpuq", {}, {0x62, 0xf3, 0xfd, 0x08, 0x1e, 0xd1}, with_ret(kKmaskToRax), 8, k},
        {"vcmpsd k{k}",
         kRdiToKmask,
         {0x62, 0xf1, 0xff, 0x09, 0xc2, 0xd1},
         with_ret(kKmaskToRax),
         32,
         k},
        {"vcmppd k", {}, {0x62, 0xf1, 0xfd, 0x08, 0xc2, 0xd1}, with_ret(kKmaskToRax), 32, k},
    };
    t.insert(t.end(), evex.begin(), evex.end());
  }
  return t;
}

// Inputs in xmm0-2: strings with NULs and repeats for the string compares, and doubles,
// floats and bytes of every kind for the rest.
void RandomInputs(std::mt19937& rng, CpuState* s) {
  static const double kDoubles[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -2.5,
                                    0.5,
                                    1.5,
                                    2.5,
                                    -0.5,
                                    1e300,
                                    -1e-310,
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::signaling_NaN(),
                                    3.7,
                                    -3.7};
  for (int r = 0; r < 3; ++r) {
    uint8_t* x = s->zmm[r].data();
    switch (rng() % 4) {
      case 0:  // a short string from a small alphabet
        for (int i = 0; i < 16; ++i) x[i] = static_cast<uint8_t>("abc\0"[rng() % 4]);
        break;
      case 1:
        for (int i = 0; i < 16; i += 8) {
          const double d = kDoubles[rng() % std::size(kDoubles)];
          std::memcpy(x + i, &d, 8);
        }
        break;
      case 2:
        for (int i = 0; i < 16; i += 4) {
          const float f = static_cast<float>(kDoubles[rng() % std::size(kDoubles)]);
          std::memcpy(x + i, &f, 4);
        }
        break;
      default:
        for (int i = 0; i < 16; ++i) x[i] = static_cast<uint8_t>(rng());
        break;
    }
  }
  // pcmpestr* lengths: small, negative, and past the element count.
  static const int64_t kLengths[] = {0,  1,  3,  8,   15,   16,
                                     17, -1, -9, 100, -100, std::numeric_limits<int64_t>::min()};
  s->gpr[kRax] = static_cast<uint64_t>(kLengths[rng() % std::size(kLengths)]);
  s->gpr[kRdx] = static_cast<uint64_t>(kLengths[rng() % std::size(kLengths)]);
  s->gpr[kRdi] = (static_cast<uint64_t>(rng()) << 32) | rng();  // an opmask
}

TEST(VectorInstructions, EveryImmediateMatchesTheCpu) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  std::mt19937 rng(77);
  int runs = 0;
  for (const Template& t : Templates()) {
    int failures = 0;
    for (unsigned imm = 0; imm < t.imm_count; ++imm) {
      std::vector<uint8_t> code = t.prologue;
      code.insert(code.end(), t.instruction.begin(), t.instruction.end());
      code.push_back(static_cast<uint8_t>(imm));
      code.insert(code.end(), t.epilogue.begin(), t.epilogue.end());
      std::memcpy(h.code(), code.data(), code.size());
      for (int input = 0; input < 6; ++input) {
        CpuState start = h.CallState(h.code());
        RandomInputs(rng, &start);
        const EmulatedWindow w = h.Emulate(start);
        const auto r = h.Trace(start);
        ++runs;
        ASSERT_TRUE(r.ok) << t.name << " " << imm << ": " << r.error;
        bool same = w.end_address == kReturnSentinel && w.state.mxcsr == r.mxcsr;
        switch (t.result) {
          case Result::kXmm0:
            same = same && std::memcmp(w.state.zmm[0].data(), r.xmm0.data(), 16) == 0;
            break;
          case Result::kFlagsAndIndex:
            same = same && w.state.gpr[kRdx] == r.rdx;
            [[fallthrough]];
          case Result::kFlags:
            same = same && (w.state.gpr[kRax] & kFlagBits) == (r.rax & kFlagBits) &&
                   std::memcmp(w.state.zmm[0].data(), r.xmm0.data(), 16) == 0;
            break;
          case Result::kRax:
            same = same && w.state.gpr[kRax] == r.rax;
            break;
        }
        if (!same && ++failures <= 5)
          ADD_FAILURE() << t.name << " imm " << imm << " input " << input << ": emulated rax "
                        << std::hex << w.state.gpr[kRax] << " rdx " << w.state.gpr[kRdx]
                        << " mxcsr " << w.state.mxcsr << ", native rax " << r.rax << " rdx "
                        << r.rdx << " mxcsr " << r.mxcsr << "; " << EndText(w);
      }
    }
  }
  std::printf("[ vector   ] imm8 sweeps: %d runs compared with the CPU\n", runs);
}

// --- intrinsic kernels ---------------------------------------------------------------------

uint64_t Fold(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001b3ull + (h >> 29);
}

NATIVE uint64_t Sse2Kernel(const uint8_t* p, uint64_t n) {
  __m128i acc = _mm_setzero_si128();
  uint64_t bits = 0;
  for (uint64_t i = 0; i + 32 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16));
    __m128i t = _mm_add_epi8(a, b);
    t = _mm_subs_epu8(t, a);
    t = _mm_adds_epi16(t, b);
    t = _mm_avg_epu8(t, a);
    t = _mm_max_epi16(t, b);
    t = _mm_min_epu8(t, a);
    t = _mm_xor_si128(t, _mm_cmpgt_epi8(a, b));
    t = _mm_or_si128(t, _mm_cmpeq_epi32(a, b));
    t = _mm_add_epi16(t, _mm_mullo_epi16(a, b));
    t = _mm_sub_epi16(t, _mm_mulhi_epi16(a, b));
    t = _mm_add_epi64(t, _mm_mul_epu32(a, b));
    t = _mm_add_epi32(t, _mm_slli_epi32(a, 3));
    t = _mm_sub_epi32(t, _mm_srai_epi32(b, 5));
    t = _mm_xor_si128(t, _mm_srl_epi16(a, _mm_cvtsi32_si128(static_cast<int>(i % 19))));
    t = _mm_add_epi8(t, _mm_sra_epi16(b, _mm_cvtsi32_si128(static_cast<int>(i % 17))));
    t = _mm_xor_si128(t, _mm_slli_si128(a, 5));
    t = _mm_add_epi8(t, _mm_srli_si128(b, 9));
    t = _mm_andnot_si128(t, _mm_unpacklo_epi8(a, b));
    t = _mm_add_epi8(t, _mm_unpackhi_epi16(a, b));
    t = _mm_xor_si128(t, _mm_unpacklo_epi32(a, b));
    t = _mm_add_epi8(t, _mm_unpackhi_epi64(a, b));
    t = _mm_add_epi8(t, _mm_packs_epi16(a, b));
    t = _mm_xor_si128(t, _mm_packus_epi16(a, b));
    t = _mm_add_epi8(t, _mm_packs_epi32(a, b));
    t = _mm_xor_si128(t, _mm_shuffle_epi32(a, 0x93));
    t = _mm_add_epi8(t, _mm_shufflelo_epi16(b, 0x1e));
    t = _mm_xor_si128(t, _mm_shufflehi_epi16(a, 0xc9));
    t = _mm_insert_epi16(t, _mm_extract_epi16(a, 3), 6);
    t = _mm_sub_epi64(t, _mm_srli_epi64(a, 61));
    t = _mm_adds_epu16(t, _mm_subs_epi8(a, b));
    t = _mm_add_epi32(t, _mm_madd_epi16(a, b));
    t = _mm_xor_si128(t, _mm_sad_epu8(a, b));
    acc = _mm_add_epi64(acc, t);
    bits = Fold(bits, static_cast<uint64_t>(_mm_movemask_epi8(t)));
  }
  return Fold(bits, static_cast<uint64_t>(_mm_cvtsi128_si64(acc)) ^
                        static_cast<uint64_t>(_mm_extract_epi16(acc, 7)));
}

NATIVE_FOR("ssse3,sse4.1,sse4.2,popcnt") uint64_t Sse4Kernel(const uint8_t* p, uint64_t n) {
  __m128i acc = _mm_set1_epi8(7);
  uint64_t bits = 0;
  for (uint64_t i = 0; i + 32 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16));
    __m128i t = _mm_shuffle_epi8(a, b);
    t = _mm_add_epi8(t, _mm_alignr_epi8(a, b, 3));
    t = _mm_xor_si128(t, _mm_alignr_epi8(b, a, 13));
    t = _mm_add_epi8(t, _mm_abs_epi8(a));
    t = _mm_add_epi16(t, _mm_abs_epi16(b));
    t = _mm_add_epi32(t, _mm_abs_epi32(a));
    t = _mm_xor_si128(t, _mm_min_epi32(a, b));
    t = _mm_add_epi32(t, _mm_max_epu32(a, b));
    t = _mm_add_epi32(t, _mm_mullo_epi32(a, b));
    t = _mm_xor_si128(t, _mm_cmpeq_epi64(a, b));
    t = _mm_xor_si128(t, _mm_cmpgt_epi64(a, b));
    t = _mm_blend_epi16(t, a, 0xa5);
    t = _mm_blendv_epi8(t, b, a);
    t = _mm_add_epi16(t, _mm_cvtepu8_epi16(a));
    t = _mm_add_epi32(t, _mm_cvtepi16_epi32(b));
    t = _mm_add_epi64(t, _mm_cvtepu8_epi64(a));
    t = _mm_insert_epi8(t, _mm_extract_epi8(a, 5), 11);
    t = _mm_insert_epi32(t, _mm_extract_epi32(b, 2), 1);
    t = _mm_insert_epi64(t, _mm_extract_epi64(a, 1), 0);
    t = _mm_add_epi16(t, _mm_packus_epi32(a, b));
    t = _mm_add_epi8(t, _mm_sign_epi8(a, b));
    bits = Fold(bits, static_cast<uint64_t>(_mm_testz_si128(a, b)) * 2 +
                          static_cast<uint64_t>(_mm_testc_si128(a, b)));
    bits = Fold(bits, static_cast<uint64_t>(_mm_cmpistri(a, b, 0x0c)));
    bits = Fold(bits, static_cast<uint64_t>(_mm_cmpistri(a, b, 0x3a)));
    bits = Fold(bits, static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_cmpistrm(a, b, 0x44))));
    bits = Fold(bits, static_cast<uint64_t>(_mm_cmpestri(a, static_cast<int>(i % 20), b, 5, 0x18)));
    acc = _mm_add_epi64(acc, t);
  }
  return Fold(bits, static_cast<uint64_t>(_mm_cvtsi128_si64(acc)) ^
                        static_cast<uint64_t>(_mm_extract_epi64(acc, 1)));
}

NATIVE_FOR("avx2,bmi2") uint64_t Avx2Kernel(const uint8_t* p, uint64_t n) {
  __m256i acc = _mm256_set1_epi16(3);
  uint64_t bits = 0;
  for (uint64_t i = 0; i + 64 <= n; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
    __m256i t = _mm256_add_epi8(a, b);
    t = _mm256_xor_si256(t, _mm256_shuffle_epi8(a, b));
    t = _mm256_add_epi32(t, _mm256_madd_epi16(a, b));
    t = _mm256_xor_si256(t, _mm256_sad_epu8(a, b));
    t = _mm256_add_epi64(t, _mm256_permute4x64_epi64(a, 0x4e));
    t = _mm256_xor_si256(t, _mm256_permutevar8x32_epi32(b, a));
    t = _mm256_add_epi8(t, _mm256_permute2x128_si256(a, b, 0x21));
    t = _mm256_xor_si256(t, _mm256_permute2x128_si256(a, b, 0x83));
    t = _mm256_inserti128_si256(t, _mm256_extracti128_si256(a, 1), 0);
    t = _mm256_add_epi8(t, _mm256_broadcastb_epi8(_mm256_castsi256_si128(b)));
    t = _mm256_add_epi8(t, _mm256_set1_epi8(static_cast<char>(p[i])));
    t = _mm256_xor_si256(t, _mm256_sllv_epi32(a, _mm256_and_si256(b, _mm256_set1_epi32(63))));
    t = _mm256_add_epi64(t, _mm256_srlv_epi64(b, _mm256_and_si256(a, _mm256_set1_epi64x(127))));
    t = _mm256_xor_si256(t, _mm256_srav_epi32(a, _mm256_and_si256(b, _mm256_set1_epi32(63))));
    t = _mm256_blend_epi32(t, a, 0x5a);
    t = _mm256_add_epi8(t, _mm256_unpacklo_epi8(a, b));
    t = _mm256_add_epi8(t, _mm256_unpackhi_epi32(a, b));
    t = _mm256_xor_si256(t, _mm256_packs_epi16(a, b));
    t = _mm256_add_epi8(t, _mm256_alignr_epi8(a, b, 7));
    t = _mm256_xor_si256(t, _mm256_cmpeq_epi64(a, b));
    t = _mm256_add_epi8(t, _mm256_max_epi8(a, b));
    t = _mm256_add_epi16(t, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(a)));
    t = _mm256_xor_si256(t, _mm256_slli_si256(b, 3));
    t = _mm256_xor_si256(t, _mm256_broadcastsi128_si256(_mm256_castsi256_si128(a)));
    bits = Fold(bits, static_cast<uint32_t>(_mm256_movemask_epi8(t)));
    bits = Fold(bits, static_cast<uint64_t>(_mm256_testz_si256(a, b)));
    acc = _mm256_add_epi64(acc, t);
  }
  const __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  return Fold(bits, static_cast<uint64_t>(_mm_cvtsi128_si64(s)) ^
                        static_cast<uint64_t>(_mm_extract_epi64(s, 1)));
}

// GCC 12 at -O2 warns that the AVX-512 intrinsics' internal "undefined" source vectors are
// uninitialized (a known false positive of their headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Masked loads and stores near the end of the readable region: masked-off bytes lie in the
// unmapped page and must not be touched.
NATIVE_FOR("avx512f,avx512bw,avx512vl,avx512dq,bmi2")
uint64_t Avx512Kernel(const uint8_t* p, uint64_t n, uint8_t* scratch) {
  uint64_t bits = 0;
  __m512i acc = _mm512_set1_epi32(11);
  for (uint64_t i = 0; i < n; i += 64) {
    const uint64_t left = n - i;
    const __mmask64 live = left >= 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(left));
    const __m512i a = _mm512_maskz_loadu_epi8(live, p + i);
    const __m256i a256 = _mm256_maskz_loadu_epi8(static_cast<__mmask32>(live), p + i);
    const __m512i b = _mm512_set1_epi8(static_cast<char>(0x40 + i));
    const __mmask64 lt = _mm512_mask_cmp_epu8_mask(live, a, b, _MM_CMPINT_LT);
    const __mmask64 ne = _mm512_cmpneq_epi8_mask(a, b);
    const __mmask32 zero = _mm256_testn_epi8_mask(a256, a256);
    const __mmask32 some = _mm256_test_epi8_mask(a256, _mm256_set1_epi8(0x21));
    __m512i t = _mm512_mask_min_epu8(a, lt, a, b);
    t = _mm512_ternarylogic_epi32(t, a, b, 0x96);
    t = _mm512_mask_ternarylogic_epi64(t, static_cast<__mmask8>(lt), a, b, 0xca);
    t = _mm512_maskz_add_epi32(static_cast<__mmask16>(ne), t, a);
    t = _mm512_mask_sub_epi64(t, static_cast<__mmask8>(ne >> 8), t, b);
    t = _mm512_mask_blend_epi8(lt ^ ne, t, a);
    t = _mm512_add_epi8(t, _mm512_movm_epi8(_mm512_movepi8_mask(a)));
    t = _mm512_inserti32x4(t, _mm512_extracti64x2_epi64(a, 2), 1);
    t = _mm512_xor_si512(t, _mm512_set1_epi8(static_cast<char>(n)));
    __mmask64 k = _kshiftli_mask64(lt, 3);
    k = _kor_mask64(k, _kshiftri_mask64(ne, 5));
    k = _kxnor_mask64(k, _kand_mask64(lt, ne));
    k = _kadd_mask64(k, _cvtu64_mask64(i));
    const __mmask32 z = _knot_mask32(static_cast<__mmask32>(_mm512_kunpackd(zero, some)));
    bits = Fold(bits, _cvtmask64_u64(k));
    bits = Fold(bits, _cvtmask32_u32(z) + 2 * _kortestz_mask64_u8(lt, ne) +
                          4 * _kortestc_mask64_u8(lt, ne) + 8 * _ktestz_mask32_u8(zero, some) +
                          16 * _ktestc_mask32_u8(zero, some));
    // A masked store into the scratch line, read back: the window sees its own store.
    _mm512_mask_storeu_epi8(scratch, lt, t);
    bits = Fold(bits, *reinterpret_cast<const uint64_t*>(scratch + (i % 56)));
    acc = _mm512_add_epi64(acc, t);
  }
  const __m256i s =
      _mm256_add_epi64(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
  const __m128i q = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return Fold(bits, static_cast<uint64_t>(_mm_cvtsi128_si64(q)) ^
                        static_cast<uint64_t>(_mm_extract_epi64(q, 1)));
}
#pragma GCC diagnostic pop

// Runs a kernel emulated and natively (the result) and single-stepped (the events).
void CheckKernel(const char* name, const void* fn, uint64_t a0, uint64_t a1, uint64_t a2,
                 uint64_t native, bool trace) {
  CallHarness& h = Harness();
  const CpuState start = h.CallState(fn, a0, a1, a2);
  const EmulatedWindow w = h.Emulate(start);
  ASSERT_EQ(w.end_address, kReturnSentinel) << name << ": " << EndText(w);
  EXPECT_EQ(w.state.gpr[kRax], native) << name;
  if (!trace) return;
  const auto r = h.Trace(start);
  ASSERT_TRUE(r.ok) << name << ": " << r.error;
  EXPECT_EQ(r.rax, native) << name;
  EXPECT_EQ(w.events, r.events) << name;
}

TEST(VectorInstructions, IntrinsicKernelsMatchTheCpu) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  std::mt19937 rng(3);
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  const bool sse4 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt");
  for (int round = 0; round < 30; ++round) {
    const uint64_t n = 64 + rng() % 400;
    // Inputs end right before the guard page, so masked loads past them must not fault.
    uint8_t* p = h.RegionEnd(0) - n;
    for (uint64_t i = 0; i < n; ++i)
      p[i] = static_cast<uint8_t>(round % 3 == 0 ? "ab\0\xff"[rng() % 4] : rng());
    uint8_t* scratch = h.Region(1) + CallHarness::kPage;
    const bool trace = round % 5 == 0;
    const uint64_t a = reinterpret_cast<uint64_t>(p);
    CheckKernel("Sse2Kernel", reinterpret_cast<const void*>(&Sse2Kernel), a, n, 0, Sse2Kernel(p, n),
                trace);
    if (sse4)
      CheckKernel("Sse4Kernel", reinterpret_cast<const void*>(&Sse4Kernel), a, n, 0,
                  Sse4Kernel(p, n), trace);
    if (avx2)
      CheckKernel("Avx2Kernel", reinterpret_cast<const void*>(&Avx2Kernel), a, n, 0,
                  Avx2Kernel(p, n), trace);
    if (HasAvx512()) {
      // The native call stores into the scratch line too: give both runs the same bytes.
      std::vector<uint8_t> before(scratch, scratch + 64);
      const uint64_t native = Avx512Kernel(p, n, scratch);
      std::memcpy(scratch, before.data(), 64);
      CheckKernel("Avx512Kernel", reinterpret_cast<const void*>(&Avx512Kernel), a, n,
                  reinterpret_cast<uint64_t>(scratch), native, trace);
      EXPECT_TRUE(std::equal(before.begin(), before.end(), scratch))
          << "the emulator stored into the target";
    }
  }
}

// --- the rules around the instructions -----------------------------------------------------

// Legacy SSE writes keep bits 128-511 of the register; VEX writes clear everything above the
// destination; EVEX writes to a ymm clear bits 256-511. Returns the bytes the kernel sees.
NATIVE_FOR("avx512f,avx512vl") uint64_t UpperBits(const uint8_t* p) {
  uint64_t a, b, c, d;
  asm volatile(
      "vmovdqu64 (%[p]), %%zmm17\n\t"
      "vmovdqu (%[p]), %%ymm0\n\t"
      "vmovdqu 32(%[p]), %%ymm1\n\t"
      "paddb %%xmm1, %%xmm0\n\t"  // legacy: ymm0's upper half stays
      "vextracti128 $1, %%ymm0, %%xmm2\n\t"
      "vmovq %%xmm2, %[a]\n\t"
      "vpaddb %%xmm1, %%xmm1, %%xmm3\n\t"  // VEX: ymm3's upper half cleared
      "vmovdqu 32(%[p]), %%ymm3\n\t"
      "vpaddb %%xmm1, %%xmm1, %%xmm3\n\t"
      "vextracti128 $1, %%ymm3, %%xmm2\n\t"
      "vmovq %%xmm2, %[b]\n\t"
      "vpaddq %%ymm17, %%ymm17, %%ymm17\n\t"  // EVEX ymm: zmm17 bits 256-511 cleared
      "vextracti64x4 $1, %%zmm17, %%ymm2\n\t"
      "vmovq %%xmm2, %[c]\n\t"
      "movss (%[p]), %%xmm1\n\t"  // load form zeroes bits 32-127, keeps the rest
      "movhlps %%xmm1, %%xmm0\n\t"
      "vmovq %%xmm0, %[d]\n\t"
      "vzeroupper\n\t"
      : [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d)
      : [p] "r"(p)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm17");
  return Fold(Fold(Fold(a, b), c), d);
}

TEST(VectorInstructions, WritesKeepOrClearTheUpperBitsLikeTheCpu) {
  if (!HasAvx512()) GTEST_SKIP() << "needs AVX-512";
  CallHarness& h = Harness();
  uint8_t* p = h.Region(0) + 64;
  for (int i = 0; i < 128; ++i) p[i] = static_cast<uint8_t>(i * 37 + 1);
  CheckKernel("UpperBits", reinterpret_cast<const void*>(&UpperBits), reinterpret_cast<uint64_t>(p),
              0, 0, UpperBits(p), true);
}

NATIVE uint64_t AlignedLoad(const uint8_t* p) {
  uint64_t r;
  asm volatile("movaps (%1), %%xmm0\n\tmovq %%xmm0, %0" : "=r"(r) : "r"(p) : "xmm0");
  return r;
}

NATIVE uint64_t AlignedSseOperand(const uint8_t* p) {
  uint64_t r;
  asm volatile("pxor %%xmm0, %%xmm0\n\tpaddb (%1), %%xmm0\n\tmovq %%xmm0, %0"
               : "=r"(r)
               : "r"(p)
               : "xmm0");
  return r;
}

// A misaligned movaps, or a misaligned m128 operand of a legacy SSE instruction, faults on the
// CPU: the window ends there (kFault). The aligned ones run.
TEST(VectorInstructions, AlignmentFaultsWhereTheCpuFaults) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  uint8_t* base = h.Region(0) + CallHarness::kPage;
  for (const void* fn : {reinterpret_cast<const void*>(&AlignedLoad),
                         reinterpret_cast<const void*>(&AlignedSseOperand)}) {
    for (int offset : {0, 1, 8, 16}) {
      const CpuState start = h.CallState(fn, reinterpret_cast<uint64_t>(base + offset));
      const EmulatedWindow w = h.Emulate(start);
      const auto r = h.Trace(start);
      if (offset % 16 == 0) {
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_EQ(w.end_address, kReturnSentinel) << EndText(w);
        EXPECT_EQ(w.state.gpr[kRax], r.rax);
      } else {
        EXPECT_EQ(r.signal, SIGSEGV) << r.error;
        EXPECT_EQ(w.end, EmulationEnd::kFault) << EndText(w);
        EXPECT_EQ(w.end_address, r.signal_rip);
        EXPECT_EQ(w.events, r.events);
      }
    }
  }
}

NATIVE_FOR("avx512f,avx512bw,avx512vl") uint64_t MaskedLoad(const uint8_t* p, uint64_t mask) {
  const __m256i v = _mm256_maskz_loadu_epi8(static_cast<__mmask32>(mask), p);
  return static_cast<uint64_t>(_mm256_movemask_epi8(v)) ^
         static_cast<uint64_t>(_mm256_extract_epi64(v, 3));
}

// A masked load whose selected bytes are readable runs though its vector reaches into the
// unmapped page; one that selects a byte there faults, on the CPU and in the emulator.
TEST(VectorInstructions, MaskedLoadsTouchOnlySelectedBytes) {
  if (!HasAvx512()) GTEST_SKIP() << "needs AVX-512";
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  for (uint64_t readable : {0, 1, 5, 31}) {
    uint8_t* p = h.RegionEnd(0) - readable;
    for (uint64_t i = 0; i < readable; ++i) p[i] = static_cast<uint8_t>(0x80 + i);
    for (bool reach_over : {false, true}) {
      const uint64_t mask = (1ull << readable) - 1 + (reach_over ? 1ull << readable : 0);
      const CpuState start = h.CallState(reinterpret_cast<const void*>(&MaskedLoad),
                                         reinterpret_cast<uint64_t>(p), mask);
      const EmulatedWindow w = h.Emulate(start);
      const auto r = h.Trace(start);
      if (!reach_over) {
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_EQ(w.end_address, kReturnSentinel) << EndText(w);
        EXPECT_EQ(w.state.gpr[kRax], r.rax);
      } else {
        EXPECT_EQ(r.signal, SIGSEGV) << r.error;
        EXPECT_EQ(w.end, EmulationEnd::kUnreadable) << EndText(w);
        EXPECT_EQ(w.end_address, r.signal_rip);
      }
    }
  }
}

NATIVE uint64_t IntegerOnly(uint64_t n) {
  uint64_t h = 0;
  for (uint64_t i = 0; i < n; ++i) h = h * 31 + i;
  return h;
}

NATIVE uint64_t UsesXmm(uint64_t n) {
  uint64_t r;
  asm volatile("movq %1, %%xmm0\n\tpaddq %%xmm0, %%xmm0\n\tmovq %%xmm0, %0"
               : "=r"(r)
               : "r"(n)
               : "xmm0");
  return IntegerOnly(r);
}

// A Guest whose vector registers cannot be read.
class NoVectorGuest : public testing::SelfGuest {
 public:
  bool LoadVectorState(CpuState*) override {
    ++loads;
    return false;
  }
  int loads = 0;
};

TEST(VectorInstructions, VectorStateIsLoadedOnceAndOnlyWhenNeeded) {
  CallHarness& h = Harness();
  EmulatorLimits limits;
  limits.window_taken = 1000;
  {
    WindowEmulator emulator(limits);
    testing::SelfGuest guest;
    const EmulatedWindow w =
        emulator.Run(h.CallState(reinterpret_cast<const void*>(&IntegerOnly), 50), guest);
    EXPECT_EQ(w.end_address, kReturnSentinel) << EndText(w);
    EXPECT_EQ(emulator.stats().vector_loads, 0u) << "integer code loaded the vector registers";
    const EmulatedWindow v =
        emulator.Run(h.CallState(reinterpret_cast<const void*>(&UsesXmm), 21), guest);
    EXPECT_EQ(v.end_address, kReturnSentinel) << EndText(v);
    EXPECT_EQ(v.state.gpr[kRax], UsesXmm(21));
    EXPECT_EQ(emulator.stats().vector_loads, 1u) << "one load per window that needs them";
  }
  {
    WindowEmulator emulator(limits);
    NoVectorGuest guest;
    const EmulatedWindow w =
        emulator.Run(h.CallState(reinterpret_cast<const void*>(&UsesXmm), 21), guest);
    // The window ends at the first instruction that needs the registers, inside UsesXmm.
    EXPECT_EQ(w.end, EmulationEnd::kVectorState) << EndText(w);
    EXPECT_EQ(guest.loads, 1);
    EXPECT_GE(w.end_address, reinterpret_cast<uint64_t>(&UsesXmm));
    EXPECT_LT(w.end_address, reinterpret_cast<uint64_t>(&UsesXmm) + 64);
  }
}

}  // namespace
}  // namespace pathprof::emulator
