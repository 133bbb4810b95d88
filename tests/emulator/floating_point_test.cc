// Floating point in the emulator against the CPU: compiled functions of doubles and floats
// (a dot product, a Newton square root, compares that branch, NaN and infinite inputs,
// conversions), SSE2 and AVX2/FMA/AVX-512 intrinsics, and libm, under several MXCSR settings
// (rounding modes, FTZ/DAZ). Every run is single-stepped natively from the same state: the
// result in xmm0/rax, the branch events and the MXCSR flags afterwards must be identical. With
// an exception unmasked, the window must end (kFault) exactly where the CPU traps.
#include <gtest/gtest.h>
#include <immintrin.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "call_harness.h"
#include "pathprof/core/procfs.h"

namespace pathprof::emulator {
namespace {

using testing::CallHarness;
using testing::EndText;
using testing::kReturnSentinel;
using testing::Libc;

#define NATIVE extern "C" __attribute__((noinline, no_sanitize("address", "undefined")))
#define NATIVE_FOR(isa) \
  extern "C" __attribute__((noinline, no_sanitize("address", "undefined"), target(isa)))

NATIVE double Dot(const double* a, const double* b, uint64_t n) {
  double sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

NATIVE double NewtonSqrt(double x) {
  if (!(x > 0)) return x == 0 ? 0 : std::numeric_limits<double>::quiet_NaN();
  double g = x > 1 ? x / 2 : 1;
  for (int i = 0; i < 60 && std::fabs(g * g - x) > 1e-12 * x; ++i) g = 0.5 * (g + x / g);
  return g;
}

// Every kind of compare compiled code branches on, NaN included.
NATIVE int64_t Classify(double a, double b) {
  int64_t r = 0;
  if (a < b) r |= 1;
  if (a <= b) r |= 2;
  if (a == b) r |= 4;
  if (a != b) r |= 8;
  if (a > b) r |= 16;
  if (a >= b) r |= 32;
  if (a != a) r |= 64;
  if (std::isless(a, b)) r |= 128;
  if (std::isunordered(a, b)) r |= 256;
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  if (fa < fb) r |= 512;
  if (fa == fb) r |= 1024;
  if (fa >= fb) r |= 2048;
  return r;
}

NATIVE uint64_t Conversions(double d, float f, int64_t i) {
  uint64_t h = 0;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(static_cast<uint64_t>(static_cast<int32_t>(d < 3e9 && d > -3e9 ? d : 0)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(d < 9e18 && d > -9e18 ? d : 0)));
  float df = static_cast<float>(d);
  uint32_t dfb;
  std::memcpy(&dfb, &df, 4);
  mix(dfb);
  double fd = static_cast<double>(f);
  uint64_t fdb;
  std::memcpy(&fdb, &fd, 8);
  mix(fdb);
  double id = static_cast<double>(i);
  std::memcpy(&fdb, &id, 8);
  mix(fdb);
  float ifl = static_cast<float>(i);
  std::memcpy(&dfb, &ifl, 4);
  mix(dfb);
  mix(static_cast<uint64_t>(static_cast<int32_t>(f < 2e9f && f > -2e9f ? f : 0)));
  mix(static_cast<uint64_t>(static_cast<uint32_t>(d < 4e9 && d >= 0 ? d : 0)));
  mix(static_cast<uint64_t>(_mm_cvtsd_si64(_mm_set_sd(d))));  // rounds by MXCSR
  mix(static_cast<uint64_t>(_mm_cvtss_si32(_mm_set_ss(f))));
  mix(static_cast<uint64_t>(_mm_cvttsd_si32(_mm_set_sd(d))));  // out of range: indefinite
  return h;
}

NATIVE double Divide(double a, double b) {
  return a / b;
}

NATIVE float FloatMix(float a, float b) {
  float r = a * b + a / (b == 0 ? 1.0f : b) - std::sqrt(std::fabs(b));
  r = std::max(r, a) - std::min(a, b);
  if (r > 1e3f) r *= 0.001f;
  return r + static_cast<float>(static_cast<int>(b));
}

// SSE2 packed double and single: arithmetic, compares to masks, shuffles, conversions.
NATIVE double PackedSse2(const double* a, uint64_t n) {
  __m128d acc = _mm_setzero_pd();
  __m128 facc = _mm_set1_ps(1.0f);
  int bits = 0;
  for (uint64_t i = 0; i + 2 <= n; i += 2) {
    const __m128d v = _mm_loadu_pd(a + i);
    const __m128d w = _mm_shuffle_pd(v, v, 1);
    acc = _mm_add_pd(acc, _mm_mul_pd(v, w));
    acc = _mm_max_pd(_mm_min_pd(acc, _mm_set1_pd(1e6)), _mm_set1_pd(-1e6));
    bits += _mm_movemask_pd(_mm_cmplt_pd(v, w)) + 4 * _mm_movemask_pd(_mm_cmpunord_pd(v, w));
    acc = _mm_add_pd(
        acc, _mm_sqrt_pd(_mm_and_pd(v, _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffll)))));
    const __m128 f = _mm_cvtpd_ps(v);
    facc = _mm_add_ps(_mm_mul_ps(facc, _mm_set1_ps(0.5f)), _mm_shuffle_ps(f, f, 0x1b));
    facc = _mm_xor_ps(facc, _mm_set1_ps(-0.0f));
    const __m128i t = _mm_cvttpd_epi32(_mm_min_pd(v, _mm_set1_pd(1e9)));
    acc = _mm_add_pd(acc, _mm_cvtepi32_pd(t));
    acc = _mm_unpacklo_pd(acc, _mm_add_pd(acc, _mm_cvtps_pd(facc)));
    bits += _mm_movemask_ps(_mm_cmpneq_ps(facc, _mm_cvtepi32_ps(_mm_cvtps_epi32(facc))));
  }
  return _mm_cvtsd_f64(acc) + _mm_cvtss_f32(facc) + bits;
}

NATIVE_FOR("avx2,fma") double PackedAvx2(const double* a, uint64_t n) {
  __m256d acc = _mm256_set1_pd(0.25);
  for (uint64_t i = 0; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_loadu_pd(a + i);
    const __m256d p = _mm256_permute4x64_pd(v, 0x4e);
    acc = _mm256_fmadd_pd(v, p, acc);
    acc = _mm256_fnmadd_pd(acc, _mm256_set1_pd(1e-3), acc);
    const __m256d ge = _mm256_cmp_pd(v, p, _CMP_GE_OQ);
    acc = _mm256_blendv_pd(acc, _mm256_floor_pd(acc), ge);
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_cvtpd_ps(v)));
    acc = _mm256_max_pd(_mm256_min_pd(acc, _mm256_set1_pd(1e9)), _mm256_set1_pd(-1e9));
    if (_mm256_movemask_pd(_mm256_cmp_pd(acc, acc, _CMP_UNORD_Q))) acc = _mm256_set1_pd(7);
  }
  const __m128d lo = _mm256_castpd256_pd128(acc), hi = _mm256_extractf128_pd(acc, 1);
  const __m128d s = _mm_add_pd(lo, hi);
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// GCC 12 at -O2 warns that the AVX-512 intrinsics' internal "undefined" source vectors are
// uninitialized (a known false positive of their headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
NATIVE_FOR("avx512f,avx512vl,avx512dq,avx512bw") double PackedAvx512(const double* a, uint64_t n) {
  __m512d acc = _mm512_set1_pd(1.5);
  __mmask8 seen = 0;
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    const __m512d v = _mm512_loadu_pd(a + i);
    const __mmask8 positive = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ);
    acc = _mm512_mask_add_pd(acc, positive, acc, v);
    acc = _mm512_maskz_mul_pd(static_cast<__mmask8>(~positive | 1), acc, _mm512_set1_pd(0.75));
    acc = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(acc, v, _CMP_LT_OS), acc, v);
    acc = _mm512_fmadd_pd(acc, _mm512_set1_pd(0.5), _mm512_sqrt_pd(_mm512_abs_pd(v)));
    seen = _kor_mask8(seen, positive);
  }
  const __m256d lo = _mm512_castpd512_pd256(acc), hi = _mm512_extractf64x4_pd(acc, 1);
  const __m256d s = _mm256_add_pd(lo, hi);
  const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t))) + seen;
}
#pragma GCC diagnostic pop

CallHarness& Harness() {
  static CallHarness harness;
  return harness;
}

constexpr uint32_t kDefaultMxcsr = 0x1f80;
// Round to nearest, down, up, toward zero; FTZ and DAZ.
constexpr uint32_t kMxcsrSettings[] = {0x1f80, 0x3f80, 0x5f80, 0x7f80, 0x9fc0};

std::vector<double> SpecialDoubles() {
  const double inf = std::numeric_limits<double>::infinity();
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const double snan = std::numeric_limits<double>::signaling_NaN();
  const double denormal = std::numeric_limits<double>::denorm_min() * 12345;
  return {0.0,        -0.0,   1.0,         -1.5,   2.0,  0.1,  1e300,
          -1e300,     1e-310, denormal,    inf,    -inf, qnan, snan,
          -qnan,      3e9,    -3e9,        9.5e18, 2.5,  -2.5, 0.49999999999999994,
          123456.789, 1e-5,   4294967295.5};
}

struct FpCheck {
  int runs = 0;
  int failures = 0;
};

// Runs `start` emulated and natively; everything observable must agree.
void Compare(const std::string& what, const CpuState& start, FpCheck* check) {
  CallHarness& h = Harness();
  const EmulatedWindow w = h.Emulate(start);
  const auto r = h.Trace(start);
  ++check->runs;
  auto fail = [&](const std::string& why) {
    if (++check->failures <= 10) ADD_FAILURE() << what << ": " << why;
  };
  if (!r.ok) {
    // The CPU trapped (an unmasked exception): the window must end right there, as a fault.
    if (r.signal == SIGFPE && w.end == EmulationEnd::kFault && w.end_address == r.signal_rip)
      return;
    fail("native: " + r.error + "; emulated: " + EndText(w));
    return;
  }
  if (w.end_address != kReturnSentinel) {
    fail("the window ended " + EndText(w));
    return;
  }
  if (std::memcmp(w.state.zmm[0].data(), r.xmm0.data(), 8) != 0 || w.state.gpr[kRax] != r.rax)
    fail("results differ");
  if (w.state.mxcsr != r.mxcsr) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "mxcsr %#x emulated, %#x native", w.state.mxcsr, r.mxcsr);
    fail(buf);
  }
  if (w.events != r.events) fail("branch events differ");
}

CpuState WithDoubles(const CpuState& base, std::initializer_list<double> xmm, uint32_t mxcsr) {
  CpuState s = base;
  int i = 0;
  for (double d : xmm) std::memcpy(s.zmm[i++].data(), &d, 8);
  s.mxcsr = mxcsr;
  return s;
}

TEST(FloatingPoint, ScalarFunctionsMatchTheCpu) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  FpCheck check;
  const auto values = SpecialDoubles();
  for (uint32_t mxcsr : kMxcsrSettings) {
    for (size_t i = 0; i < values.size(); ++i) {
      const double a = values[i], b = values[(i * 7 + 3) % values.size()];
      const std::string in =
          "a=" + std::to_string(a) + " b=" + std::to_string(b) + " mxcsr=" + std::to_string(mxcsr);
      Compare("NewtonSqrt " + in,
              WithDoubles(h.CallState(reinterpret_cast<const void*>(&NewtonSqrt)), {a}, mxcsr),
              &check);
      Compare("Classify " + in,
              WithDoubles(h.CallState(reinterpret_cast<const void*>(&Classify)), {a, b}, mxcsr),
              &check);
      CpuState conv = h.CallState(reinterpret_cast<const void*>(&Conversions),
                                  static_cast<uint64_t>(static_cast<int64_t>(i) * -987654321));
      conv = WithDoubles(conv, {a}, mxcsr);
      const float f = static_cast<float>(b);
      std::memcpy(conv.zmm[1].data(), &f, 4);
      Compare("Conversions " + in, conv, &check);
      CpuState fm = WithDoubles(h.CallState(reinterpret_cast<const void*>(&FloatMix)), {}, mxcsr);
      const float fa = static_cast<float>(a);
      std::memcpy(fm.zmm[0].data(), &fa, 4);
      std::memcpy(fm.zmm[1].data(), &f, 4);
      Compare("FloatMix " + in, fm, &check);
    }
  }
  std::printf("[ fp       ] scalar functions: %d runs compared with the CPU\n", check.runs);
}

TEST(FloatingPoint, PackedKernelsMatchTheCpu) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  FpCheck check;
  std::mt19937 rng(5);
  const auto specials = SpecialDoubles();
  auto* a = reinterpret_cast<double*>(h.Region(0) + CallHarness::kPage);
  auto* b = reinterpret_cast<double*>(h.Region(1) + CallHarness::kPage + 8);
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  for (int round = 0; round < 40; ++round) {
    const uint64_t n = 8 + round % 17;
    for (uint64_t k = 0; k < n + 8; ++k) {
      a[k] = round % 3 == 0 ? specials[rng() % specials.size()]
                            : std::ldexp(static_cast<double>(rng()) - 2e9, round % 40 - 20);
      b[k] = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 7.0;
    }
    const uint32_t mxcsr = kMxcsrSettings[round % 5];
    const std::string in = "round " + std::to_string(round);
    Compare(
        "Dot " + in,
        WithDoubles(h.CallState(reinterpret_cast<const void*>(&Dot), reinterpret_cast<uint64_t>(a),
                                reinterpret_cast<uint64_t>(b), n),
                    {}, mxcsr),
        &check);
    Compare("PackedSse2 " + in,
            WithDoubles(h.CallState(reinterpret_cast<const void*>(&PackedSse2),
                                    reinterpret_cast<uint64_t>(a), n),
                        {}, mxcsr),
            &check);
    if (avx2)
      Compare("PackedAvx2 " + in,
              WithDoubles(h.CallState(reinterpret_cast<const void*>(&PackedAvx2),
                                      reinterpret_cast<uint64_t>(a), n),
                          {}, mxcsr),
              &check);
    if (avx512)
      Compare("PackedAvx512 " + in,
              WithDoubles(h.CallState(reinterpret_cast<const void*>(&PackedAvx512),
                                      reinterpret_cast<uint64_t>(a), n),
                          {}, mxcsr),
              &check);
  }
  std::printf("[ fp       ] packed kernels: %d runs compared with the CPU (avx2 %d, avx512 %d)\n",
              check.runs, avx2, avx512);
}

TEST(FloatingPoint, LibmMatchesTheCpu) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  FpCheck check;
  const auto values = SpecialDoubles();
  int unmodelled = 0;
  for (const char* name : {"sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "pow", "fmod",
                           "atan2", "sin", "cos", "tanh", "cbrt", "hypot"}) {
    const void* fn = Libc<const void*>(name, "libm.so.6");
    ASSERT_NE(fn, nullptr) << name;
    for (uint32_t mxcsr : {kDefaultMxcsr, 0x7f80u}) {
      for (size_t i = 0; i < values.size(); ++i) {
        const double a = values[i], b = values[(i * 5 + 1) % values.size()] + 0.5;
        const CpuState start = WithDoubles(h.CallState(fn), {a, b}, mxcsr);
        // A libm function may reach an instruction the emulator does not cover (it must then
        // end the window, not guess): compare only windows that reached the return.
        const EmulatedWindow w = h.Emulate(start);
        if (w.end_address != kReturnSentinel) {
          EXPECT_TRUE(w.end == EmulationEnd::kUnmodelled || w.end == EmulationEnd::kHiddenState)
              << name << ": " << EndText(w);
          ++unmodelled;
          continue;
        }
        Compare(std::string(name) + " a=" + std::to_string(a) + " b=" + std::to_string(b), start,
                &check);
      }
    }
  }
  const char* variant = std::getenv("PATHPROF_LIBM_VARIANT");
  std::printf("[ fp       ] libm (%s): %d runs compared with the CPU, %d ended early\n",
              variant ? variant : "this CPU's ifuncs", check.runs, unmodelled);
}

// libm's ifuncs pick FMA/AVX2 variants on this CPU; a child process of this test with those
// masked (GLIBC_TUNABLES) runs LibmMatchesTheCpu on the SSE2 ones other CPUs get.
TEST(FloatingPoint, LibmSse2VariantsMatchTheCpu) {
  if (std::getenv("PATHPROF_LIBM_VARIANT")) GTEST_SKIP() << "already in a variant run";
  const auto self = procfs::Procfs::Host().Executable(getpid());  // run again as the child
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2,-FMA,-FMA4,-AVX", 1);
    setenv("PATHPROF_LIBM_VARIANT", "sse2", 1);
    execl(self->c_str(), "floating_point_test", "--gtest_filter=FloatingPoint.LibmMatchesTheCpu",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "libm's SSE2 variants failed (see the child's output above)";
}

// With the invalid-operation exception unmasked, a NaN compare traps on the CPU: the window
// must end there, as a fault, with the events before it.
TEST(FloatingPoint, UnmaskedExceptionEndsTheWindowWhereTheCpuTraps) {
  CallHarness& h = Harness();
  ASSERT_TRUE(h.tracer().ok());
  FpCheck check;
  const double snan = std::numeric_limits<double>::signaling_NaN();
  const uint32_t invalid_unmasked = kDefaultMxcsr & ~0x80u;
  const uint32_t divide_unmasked = kDefaultMxcsr & ~0x200u;
  Compare("Classify(sNaN, 1) with IM clear",
          WithDoubles(h.CallState(reinterpret_cast<const void*>(&Classify)), {snan, 1.0},
                      invalid_unmasked),
          &check);
  Compare(
      "Divide(1, 0) with ZM clear",
      WithDoubles(h.CallState(reinterpret_cast<const void*>(&Divide)), {1.0, 0.0}, divide_unmasked),
      &check);
  Compare(
      "Divide(1, 3) with ZM clear",
      WithDoubles(h.CallState(reinterpret_cast<const void*>(&Divide)), {1.0, 3.0}, divide_unmasked),
      &check);
  const EmulatedWindow w = h.Emulate(WithDoubles(
      h.CallState(reinterpret_cast<const void*>(&Classify)), {snan, 1.0}, invalid_unmasked));
  EXPECT_EQ(w.end, EmulationEnd::kFault) << EndText(w);
  // With underflow unmasked the CPU also traps on tiny exact results, which the host's masked
  // run cannot see: floating point is not modelled then.
  const EmulatedWindow u = h.Emulate(WithDoubles(
      h.CallState(reinterpret_cast<const void*>(&NewtonSqrt)), {2.0}, kDefaultMxcsr & ~0x800u));
  EXPECT_EQ(u.end, EmulationEnd::kUnmodelled) << EndText(u);
}

}  // namespace
}  // namespace pathprof::emulator
