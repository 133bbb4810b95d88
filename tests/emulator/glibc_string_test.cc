// glibc's string and memory functions, as this CPU's ifuncs picked them (the evex variants on
// AVX-512 hosts, avx2 or sse2 elsewhere), run in the emulator on thousands of inputs: every
// length to 300 at several alignments, page-crossing starts, and inputs ending right before
// an unmapped page. The emulated call must return what the native call returns, and its
// branch events must be those the CPU retires (a sample is single-stepped natively). Stores
// stay in the window: functions that store are wrapped in a call that compares the stored
// bytes with those of a native run inside the same emulated window, and the real memory is
// checked unchanged.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "call_harness.h"
#include "common/figures.h"
#include "pathprof/core/procfs.h"

namespace pathprof::emulator {
namespace {

using testing::CallHarness;
using testing::EndText;
using testing::kReturnSentinel;
using testing::Libc;

#define NATIVE extern "C" __attribute__((noinline, no_sanitize("address", "undefined")))

using Fn3 = uint64_t (*)(uint64_t, uint64_t, uint64_t);
using CompareFn = int (*)(const void*, const void*, size_t);

// A call that stores, and where to find what it should have stored: `expected` is the same
// range of the twin buffers after the native call.
struct StoreCall {
  Fn3 fn;
  uint64_t a0, a1, a2;
  const uint8_t* check;
  const uint8_t* expected;
  uint64_t check_size;
  CompareFn compare;
};
struct TwoWords {
  uint64_t ret;   // rax: what fn returned
  uint64_t same;  // rdx: 1 when the stored bytes are the expected ones
};

NATIVE TwoWords CallThenCompare(const StoreCall* c) {
  const uint64_t ret = c->fn(c->a0, c->a1, c->a2);
  return {ret, c->compare(c->check, c->expected, c->check_size) == 0 ? 1u : 0u};
}

CallHarness& Harness() {
  static CallHarness harness;
  return harness;
}

constexpr size_t kPage = CallHarness::kPage;
constexpr size_t kRegionBytes = CallHarness::kRegionPages * kPage;
constexpr int kTraceEvery = 29;
constexpr int kMaxReportedFailures = 8;

// Set in the child processes that run these tests on other ifunc variants.
constexpr const char* kVariantVariable = "PATHPROF_GLIBC_VARIANT";
constexpr const char* kStrideVariable = "PATHPROF_GLIBC_STRIDE";

// Where an input starts (from its region's start) and how long it is.
struct Placement {
  size_t offset;
  size_t length;
};

// Every length to `max_length` at three alignments; some lengths at every alignment of a
// vector and at starts just before a page boundary; every length ending right before the
// guard page. `extra`: bytes after the input it needs (a terminator); `align`: starts are
// multiples of it (wide characters).
std::vector<Placement> Placements(size_t max_length, size_t extra, size_t align = 1) {
  std::vector<Placement> out;
  auto add = [&](size_t offset, size_t length) {
    offset -= offset % align;
    if (offset + length + extra <= kRegionBytes) out.push_back({offset, length});
  };
  for (size_t len = 0; len <= max_length; ++len)
    for (size_t k = 0; k < 3; ++k) add(kPage + (len * 7 + k * 23) % 64 + k * 64, len);
  static constexpr size_t kLengths[] = {0,  1,  2,  3,  7,  8,  15,  16,  17,  31,  32,  33, 47,
                                        63, 64, 65, 95, 96, 97, 127, 128, 129, 200, 255, 300};
  for (size_t len : kLengths) {
    if (len > max_length) continue;
    for (size_t a = 0; a < 64; ++a) add(kPage + a, len);
    for (size_t back = 1; back <= 100; back += 3) add(2 * kPage - back, len);
  }
  for (size_t len = 0; len <= max_length; ++len)
    for (size_t k : {0, 1, 33}) {
      const size_t need = len + extra + k;
      if (need + align <= kRegionBytes) add(kRegionBytes - need, len);
    }
  // The runs for other ifunc variants (OtherVariantsMatchTheCpu) take every fifth input, or
  // every twentieth in the suite.
  if (const char* stride = std::getenv(kStrideVariable)) {
    std::vector<Placement> sampled;
    for (size_t i = 0; i < out.size(); i += std::max(1, std::atoi(stride)))
      sampled.push_back(out[i]);
    out.swap(sampled);
  }
  return out;
}

// Random bytes other than 0 and the `avoid` ones.
void Fill(uint8_t* p, size_t n, std::mt19937& rng, std::initializer_list<uint8_t> avoid = {}) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = 0;
    do b = static_cast<uint8_t>(rng());
    while (b == 0 || std::find(avoid.begin(), avoid.end(), b) != avoid.end());
    p[i] = b;
  }
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(v));
  return buf;
}

// Runs and checks the calls of one function; reports the first few failures in full.
class FunctionCheck {
 public:
  explicit FunctionCheck(std::string name) : name_(std::move(name)) {}
  ~FunctionCheck() {
    const char* variant = std::getenv(kVariantVariable);
    std::printf("[ glibc    ] %-10s %6d inputs, %4d single-stepped natively (%s)\n", name_.c_str(),
                inputs_, traced_, variant ? variant : "this CPU's ifuncs");
    for (const auto& [mnemonic, n] : integer_gaps_)
      std::printf(
          "[ glibc    ] %-10s %6d windows ended early at integer instruction %s (the "
          "events before it match the CPU's)\n",
          name_.c_str(), n, mnemonic.c_str());
  }

  // fn only reads memory: the emulated call must return `native`. An int result is in eax
  // only: the upper half of rax is not part of it (pass `int_result`).
  void Pure(const void* fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t native,
            const std::string& input, bool int_result = false) {
    CallHarness& h = Harness();
    const CpuState start = h.CallState(fn, a0, a1, a2);
    const EmulatedWindow w = h.Emulate(start);
    ++inputs_;
    if (EndedAtIntegerGap(start, w, input)) return;
    const uint64_t bits = int_result ? 0xffffffffu : ~0ull;
    if (w.end_address != kReturnSentinel || (w.state.gpr[kRax] & bits) != (native & bits)) {
      Fail(input, "emulated " + Hex(w.state.gpr[kRax]) + ", native " + Hex(native) + ", ended " +
                      EndText(w));
      return;
    }
    if (inputs_ % kTraceEvery == 0)
      CompareWithTrace(start, w, native & bits, std::nullopt, input, bits);
  }

  // fn stores: it runs natively on the twin buffers (pointer arguments moved there by
  // `pointer_args`, a bit per argument), then in the emulator inside CallThenCompare, which
  // compares [check, check + check_size) with the twin's bytes in the same window.
  void Store(const void* fn, uint64_t a0, uint64_t a1, uint64_t a2, unsigned pointer_args,
             bool returns_pointer, const uint8_t* check, size_t check_size,
             const std::string& input) {
    CallHarness& h = Harness();
    h.SyncTwins();
    const std::vector<uint8_t> before(check, check + check_size);
    const uint64_t args[3] = {a0, a1, a2};
    uint64_t twin_args[3];
    for (int i = 0; i < 3; ++i)
      twin_args[i] =
          (pointer_args >> i) & 1
              ? reinterpret_cast<uint64_t>(h.Twin(reinterpret_cast<const void*>(args[i])))
              : args[i];
    const uint64_t native_ret =
        reinterpret_cast<Fn3>(const_cast<void*>(fn))(twin_args[0], twin_args[1], twin_args[2]);
    const uint64_t expected_ret = returns_pointer && native_ret != 0
                                      ? native_ret - (reinterpret_cast<uint64_t>(h.Twin(check)) -
                                                      reinterpret_cast<uint64_t>(check))
                                      : native_ret;
    auto* call = reinterpret_cast<StoreCall*>(h.control());
    *call = StoreCall{reinterpret_cast<Fn3>(const_cast<void*>(fn)),
                      a0,
                      a1,
                      a2,
                      check,
                      h.Twin(check),
                      check_size,
                      Libc<CompareFn>("memcmp")};
    const CpuState start = h.CallState(reinterpret_cast<const void*>(&CallThenCompare),
                                       reinterpret_cast<uint64_t>(call));
    const EmulatedWindow w = h.Emulate(start);
    ++inputs_;
    if (!std::equal(before.begin(), before.end(), check)) {
      Fail(input, "the emulator changed the target's memory");
      return;
    }
    if (EndedAtIntegerGap(start, w, input)) return;
    if (w.end_address != kReturnSentinel || w.state.gpr[kRax] != expected_ret ||
        w.state.gpr[kRdx] != 1) {
      Fail(input, "emulated " + Hex(w.state.gpr[kRax]) + " (stored bytes " +
                      (w.state.gpr[kRdx] == 1 ? "right" : "WRONG") + "), native " +
                      Hex(expected_ret) + ", ended " + EndText(w));
      return;
    }
    if (inputs_ % kTraceEvery == 0) CompareWithTrace(start, w, expected_ret, 1, input, ~0ull);
  }

  int inputs() const { return inputs_; }

 private:
  void CompareWithTrace(const CpuState& start, const EmulatedWindow& w, uint64_t rax,
                        std::optional<uint64_t> rdx, const std::string& input, uint64_t bits) {
    const auto r = Harness().Trace(start);
    ++traced_;
    if (!r.ok) {
      Fail(input, "native trace failed: " + r.error);
      return;
    }
    if ((r.rax & bits) != rax || (rdx && r.rdx != *rdx)) {
      Fail(input, "the traced native run returned " + Hex(r.rax));
      return;
    }
    if (r.events != w.events) {
      size_t i = 0;
      while (i < r.events.size() && i < w.events.size() && r.events[i] == w.events[i]) ++i;
      std::string what = "branch events differ at #" + std::to_string(i) + " of " +
                         std::to_string(r.events.size()) + " native / " +
                         std::to_string(w.events.size()) + " emulated";
      if (i < r.events.size())
        what += "; native " + Hex(r.events[i].from) + "->" + Hex(r.events[i].to) +
                (r.events[i].taken ? " taken" : " not taken") + " after " +
                std::to_string(r.events[i].instructions);
      if (i < w.events.size())
        what += "; emulated " + Hex(w.events[i].from) + "->" + Hex(w.events[i].to) +
                (w.events[i].taken ? " taken" : " not taken") + " after " +
                std::to_string(w.events[i].instructions);
      Fail(input, what);
    }
  }

  // A window that ends at an integer instruction the emulator does not cover (integer_ops.cc
  // is not this test's subject) is counted, and its events must be the first ones the CPU
  // retires.
  bool EndedAtIntegerGap(const CpuState& start, const EmulatedWindow& w, const std::string& input) {
    if (w.end != EmulationEnd::kUnmodelled || testing::IsVectorInstructionAt(w.end_address))
      return false;
    const int gaps = ++integer_gaps_[std::string(MnemonicName(w.mnemonic))];
    if (gaps > 10 && gaps % kTraceEvery != 0) return true;
    const auto r = Harness().Trace(start);
    ++traced_;
    if (!r.ok) {
      Fail(input, "native trace failed: " + r.error);
    } else if (r.events.size() < w.events.size() ||
               !std::equal(w.events.begin(), w.events.end(), r.events.begin())) {
      Fail(input, "the events before " + EndText(w) + " are not the CPU's");
    }
    return true;
  }

  void Fail(const std::string& input, const std::string& what) {
    if (++failures_ <= kMaxReportedFailures)
      ADD_FAILURE() << name_ << "(" << input << "): " << what;
  }

  std::string name_;
  int inputs_ = 0;
  int traced_ = 0;
  int failures_ = 0;
  std::map<std::string, int> integer_gaps_;
};

std::string Describe(const char* what, const uint8_t* p, size_t len, int region = 0) {
  return std::string(what) + " at region" + std::to_string(region) + "+" +
         std::to_string(p - Harness().Region(region)) + " length " + std::to_string(len);
}

template <typename Fn>
Fn Function(const char* name) {
  Fn fn = Libc<Fn>(name);
  EXPECT_NE(fn, nullptr) << name;
  return fn;
}

TEST(GlibcStrings, TheTracerRuns) {
  ASSERT_TRUE(Harness().tracer().ok()) << "fork/ptrace unavailable";
}

TEST(GlibcStrings, Memchr) {
  auto fn = Function<void* (*)(const void*, int, size_t)>("memchr");
  ASSERT_TRUE(fn);
  FunctionCheck check("memchr");
  std::mt19937 rng(1);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    const uint8_t c = i % 3 == 0 ? 'x' : i % 3 == 1 ? 0 : 0xf0;
    const size_t room = std::min<size_t>(70, kRegionBytes - pl.offset - pl.length);
    Fill(s - std::min<size_t>(pl.offset, 16), pl.length + room + std::min<size_t>(pl.offset, 16),
         rng, {c});
    std::memset(s + pl.length, c, room);  // matches past the end must not be found
    if (pl.length > 0 && i % 4 == 1) s[pl.length - 1] = c;
    if (pl.length > 0 && i % 4 == 2) s[rng() % pl.length] = c;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), c, pl.length,
               reinterpret_cast<uint64_t>(fn(s, c, pl.length)), Describe("s", s, pl.length));
  }
}

TEST(GlibcStrings, Memrchr) {
  auto fn = Function<void* (*)(const void*, int, size_t)>("memrchr");
  ASSERT_TRUE(fn);
  FunctionCheck check("memrchr");
  std::mt19937 rng(2);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    const uint8_t c = i % 3 == 0 ? 'x' : i % 3 == 1 ? 0 : 0xf0;
    const size_t before = std::min<size_t>(pl.offset, 70);
    const size_t room = std::min<size_t>(70, kRegionBytes - pl.offset - pl.length);
    Fill(s, pl.length + room, rng, {c});
    std::memset(s - before, c, before);  // matches before the start must not be found
    std::memset(s + pl.length, c, room);
    if (pl.length > 0 && i % 4 == 1) s[0] = c;
    if (pl.length > 0 && i % 4 == 2) s[rng() % pl.length] = c, s[rng() % pl.length] = c;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), c, pl.length,
               reinterpret_cast<uint64_t>(fn(s, c, pl.length)), Describe("s", s, pl.length));
  }
}

TEST(GlibcStrings, Rawmemchr) {
  auto fn = Function<void* (*)(const void*, int)>("rawmemchr");
  ASSERT_TRUE(fn);
  FunctionCheck check("rawmemchr");
  std::mt19937 rng(3);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    const uint8_t c = i % 3 == 0 ? 'x' : i % 3 == 1 ? 0 : 0xf0;
    Fill(s, pl.length, rng, {c});
    s[pl.length] = c;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), c, 0,
               reinterpret_cast<uint64_t>(fn(s, c)), Describe("s", s, pl.length));
  }
}

TEST(GlibcStrings, Strlen) {
  auto fn = Function<size_t (*)(const char*)>("strlen");
  ASSERT_TRUE(fn);
  FunctionCheck check("strlen");
  std::mt19937 rng(4);
  for (const Placement& pl : Placements(300, 1)) {
    uint8_t* s = Harness().Region(0) + pl.offset;
    Fill(s, pl.length, rng);
    s[pl.length] = 0;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), 0, 0,
               fn(reinterpret_cast<const char*>(s)), Describe("s", s, pl.length));
  }
}

TEST(GlibcStrings, Strnlen) {
  auto fn = Function<size_t (*)(const char*, size_t)>("strnlen");
  ASSERT_TRUE(fn);
  FunctionCheck check("strnlen");
  std::mt19937 rng(5);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    Fill(s, pl.length, rng);
    s[pl.length] = 0;
    const size_t limits[] = {pl.length, pl.length + 1, pl.length / 2, pl.length + 37,
                             0,         ~size_t{0}};
    const size_t limit = limits[i % 6];
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), limit, 0,
               fn(reinterpret_cast<const char*>(s), limit),
               Describe("s", s, pl.length) + " maxlen " + std::to_string(limit));
  }
}

void CheckStrchrLike(const char* name, int seed) {
  auto fn = Function<char* (*)(const char*, int)>(name);
  ASSERT_TRUE(fn);
  FunctionCheck check(name);
  std::mt19937 rng(seed);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    const uint8_t c = i % 4 == 0 ? 'x' : i % 4 == 1 ? 0 : i % 4 == 2 ? 0xf0 : 1;
    Fill(s, pl.length, rng, {c});
    s[pl.length] = 0;
    if (c != 0 && pl.length > 0 && i % 3 == 1) s[rng() % pl.length] = c;
    if (c != 0 && pl.length > 0 && i % 3 == 2) s[rng() % pl.length] = c, s[pl.length - 1] = c;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), c, 0,
               reinterpret_cast<uint64_t>(fn(reinterpret_cast<const char*>(s), c)),
               Describe("s", s, pl.length) + " c " + std::to_string(c));
  }
}

TEST(GlibcStrings, Strchr) {
  CheckStrchrLike("strchr", 6);
}
TEST(GlibcStrings, Strrchr) {
  CheckStrchrLike("strrchr", 7);
}
TEST(GlibcStrings, Strchrnul) {
  CheckStrchrLike("strchrnul", 8);
}

// Two strings of the same length, the second at another alignment (sometimes ending at its
// guard page), equal or differing at a random position (higher, lower, or ending early).
struct StringPair {
  uint8_t* a;
  uint8_t* b;
  size_t differ_at;  // == length when equal
};

StringPair MakePair(const Placement& pl, size_t i, std::mt19937& rng, bool terminate) {
  CallHarness& h = Harness();
  uint8_t* a = h.Region(0) + pl.offset;
  const size_t extra = terminate ? 1 : 0;
  size_t b_offset =
      i % 2 == 0 ? kPage + (i * 37) % (2 * kPage) : kRegionBytes - pl.length - extra - (i % 5) * 7;
  if (b_offset + pl.length + extra > kRegionBytes) b_offset = kPage;
  uint8_t* b = h.Region(1) + b_offset;
  Fill(a, pl.length, rng);
  if (terminate) a[pl.length] = 0;
  std::memcpy(b, a, pl.length + extra);
  size_t differ_at = pl.length;
  if (pl.length > 0 && i % 3 != 0) {
    differ_at = rng() % pl.length;
    switch (i % 4) {
      case 0:
        b[differ_at] = static_cast<uint8_t>(a[differ_at] == 0xff ? 1 : a[differ_at] + 1);
        break;
      case 1:
        b[differ_at] = static_cast<uint8_t>(a[differ_at] == 1 ? 0xff : a[differ_at] - 1);
        break;
      case 2:
        b[differ_at] = static_cast<uint8_t>(a[differ_at] ^ 0x80);
        break;
      default:
        b[differ_at] = terminate ? 0 : static_cast<uint8_t>(a[differ_at] ^ 0x41);
        break;
    }
    if (b[differ_at] == a[differ_at]) b[differ_at] ^= 2;
    if (b[differ_at] == 0 && !terminate) b[differ_at] = 3;
  }
  return {a, b, differ_at};
}

TEST(GlibcStrings, Strcmp) {
  auto fn = Function<int (*)(const char*, const char*)>("strcmp");
  ASSERT_TRUE(fn);
  FunctionCheck check("strcmp");
  std::mt19937 rng(9);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const StringPair p = MakePair(placements[i], i, rng, true);
    const int native = fn(reinterpret_cast<const char*>(p.a), reinterpret_cast<const char*>(p.b));
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(p.a),
               reinterpret_cast<uint64_t>(p.b), 0, static_cast<uint32_t>(native),
               Describe("a", p.a, placements[i].length) + ", " +
                   Describe("b", p.b, placements[i].length, 1),
               true);
  }
}

TEST(GlibcStrings, Strncmp) {
  auto fn = Function<int (*)(const char*, const char*, size_t)>("strncmp");
  ASSERT_TRUE(fn);
  FunctionCheck check("strncmp");
  std::mt19937 rng(10);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const StringPair p = MakePair(placements[i], i, rng, true);
    const size_t len = placements[i].length;
    const size_t limits[] = {len, len + 1, p.differ_at, p.differ_at + 1, len / 2, 0, ~size_t{0}};
    const size_t n = limits[i % 7];
    const int native =
        fn(reinterpret_cast<const char*>(p.a), reinterpret_cast<const char*>(p.b), n);
    check.Pure(
        reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(p.a),
        reinterpret_cast<uint64_t>(p.b), n, static_cast<uint32_t>(native),
        Describe("a", p.a, len) + ", " + Describe("b", p.b, len, 1) + " n " + std::to_string(n),
        true);
  }
}

TEST(GlibcStrings, Memcmp) {
  auto fn = Function<int (*)(const void*, const void*, size_t)>("memcmp");
  ASSERT_TRUE(fn);
  FunctionCheck check("memcmp");
  std::mt19937 rng(11);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    const StringPair p = MakePair(placements[i], i, rng, false);
    const size_t n = placements[i].length;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(p.a),
               reinterpret_cast<uint64_t>(p.b), n, static_cast<uint32_t>(fn(p.a, p.b, n)),
               Describe("a", p.a, n) + ", " + Describe("b", p.b, n, 1), true);
  }
}

// The range a store check covers: the destination with 32 bytes either side, within its
// region.
std::pair<uint8_t*, size_t> CheckRange(uint8_t* dst, size_t n, int region = 0) {
  uint8_t* lo = std::max(dst - 32, Harness().Region(region));
  uint8_t* hi = std::min(dst + n + 32, Harness().RegionEnd(region));
  return {lo, static_cast<size_t>(hi - lo)};
}

TEST(GlibcStrings, Memcpy) {
  auto fn = Function<void* (*)(void*, const void*, size_t)>("memcpy");
  ASSERT_TRUE(fn);
  FunctionCheck check("memcpy");
  std::mt19937 rng(12);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    const StringPair p = MakePair(placements[i], i, rng, false);
    const size_t n = placements[i].length;
    Fill(p.a, n, rng);  // the destination's old bytes differ from the source's
    const auto [lo, size] = CheckRange(p.a, n);
    check.Store(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(p.a),
                reinterpret_cast<uint64_t>(p.b), n, 0b011, true, lo, size,
                Describe("dst", p.a, n) + ", " + Describe("src", p.b, n, 1));
  }
}

TEST(GlibcStrings, Memmove) {
  auto fn = Function<void* (*)(void*, const void*, size_t)>("memmove");
  ASSERT_TRUE(fn);
  FunctionCheck check("memmove");
  std::mt19937 rng(13);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    const size_t n = placements[i].length;
    const int64_t deltas[] = {
        0, 1, -1, 33, -33, static_cast<int64_t>(n / 2), -static_cast<int64_t>(n / 2), 64, -64, 7};
    const int64_t delta = deltas[i % 10];
    uint8_t* region = Harness().Region(0);
    int64_t dst = static_cast<int64_t>(placements[i].offset);
    int64_t src = dst + delta;
    if (src < 0 || src + static_cast<int64_t>(n) > static_cast<int64_t>(kRegionBytes)) {
      src = dst;
      dst = dst - delta;
      if (dst < 0 || dst + static_cast<int64_t>(n) > static_cast<int64_t>(kRegionBytes)) continue;
    }
    const size_t span = n + static_cast<size_t>(std::abs(delta));
    Fill(region + std::min(dst, src), span, rng);
    const auto [lo, size] = CheckRange(region + std::min(dst, src), span);
    check.Store(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(region + dst),
                reinterpret_cast<uint64_t>(region + src), n, 0b011, true, lo, size,
                Describe("dst", region + dst, n) + " src " + std::to_string(src));
  }
}

TEST(GlibcStrings, Memset) {
  auto fn = Function<void* (*)(void*, int, size_t)>("memset");
  ASSERT_TRUE(fn);
  FunctionCheck check("memset");
  std::mt19937 rng(14);
  const auto placements = Placements(300, 0);
  for (size_t i = 0; i < placements.size(); ++i) {
    uint8_t* d = Harness().Region(0) + placements[i].offset;
    const size_t n = placements[i].length;
    const int c = i % 3 == 0 ? 0 : i % 3 == 1 ? 0xa5 : 0x1234;  // only the low byte counts
    const auto [lo, size] = CheckRange(d, n);
    Fill(lo, size, rng);
    check.Store(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(d),
                static_cast<uint64_t>(c), n, 0b001, true, lo, size, Describe("dst", d, n));
  }
}

// Large copies and fills: glibc's memcpy and memset turn to `rep movsb` / `rep stosb` above a
// threshold of a few KiB, and the emulator copies those a page at a time (integer_ops.cc,
// BulkStringElements). Every length here crosses pages, at starts on and off a page boundary.
TEST(GlibcStrings, LargeMemcpyAndMemsetAcrossPages) {
  auto copy = Function<void* (*)(void*, const void*, size_t)>("memcpy");
  auto fill = Function<void* (*)(void*, int, size_t)>("memset");
  ASSERT_TRUE(copy && fill);
  FunctionCheck check("memcpy/set");
  std::mt19937 rng(15);
  static constexpr size_t kLengths[] = {2048, 4095, 4096, 4097, 8192, 9000, 12288, 16000};
  static constexpr size_t kStarts[] = {0, 1, 63, 4093, 4096};
  for (size_t n : kLengths)
    for (size_t start : kStarts) {
      if (start + n > kRegionBytes) continue;
      uint8_t* dst = Harness().Region(0) + start;
      uint8_t* src = Harness().Region(1) + (kRegionBytes - n) / 2;
      Fill(Harness().Region(0), kRegionBytes, rng);
      Fill(src, n, rng);
      const auto [lo, size] = CheckRange(dst, n);
      check.Store(reinterpret_cast<const void*>(copy), reinterpret_cast<uint64_t>(dst),
                  reinterpret_cast<uint64_t>(src), n, 0b011, true, lo, size,
                  Describe("memcpy dst", dst, n));
      check.Store(reinterpret_cast<const void*>(fill), reinterpret_cast<uint64_t>(dst), 0x3c, n,
                  0b001, true, lo, size, Describe("memset dst", dst, n));
    }
  EXPECT_EQ(check.inputs(), 80);  // 40 placements, two calls each
}

// The string instructions themselves, where glibc would not choose them: element sizes 1 and 8,
// DF set (backwards, one element at a time in the emulator), and forward copies whose
// destination overlaps the source ahead of it (the CPU repeats the first bytes: not a
// memmove). Each returns where rdi ended, in rax.
NATIVE uint64_t RepMovsb(uint64_t dst, uint64_t src, uint64_t n) {
  asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
  return dst;
}
NATIVE uint64_t RepMovsq(uint64_t dst, uint64_t src, uint64_t n) {
  asm volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
  return dst;
}
NATIVE uint64_t RepMovsbBackwards(uint64_t dst, uint64_t src, uint64_t n) {
  dst += n - 1;
  src += n - 1;
  asm volatile("std\n\trep movsb\n\tcld" : "+D"(dst), "+S"(src), "+c"(n) : : "memory", "cc");
  return dst;
}
NATIVE uint64_t RepStosb(uint64_t dst, uint64_t value, uint64_t n) {
  asm volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(value) : "memory");
  return dst;
}
NATIVE uint64_t RepStosd(uint64_t dst, uint64_t value, uint64_t n) {
  asm volatile("rep stosl" : "+D"(dst), "+c"(n) : "a"(value) : "memory");
  return dst;
}

TEST(GlibcStrings, RepMovsAndStosMatchTheCpu) {
  FunctionCheck check("rep movs/stos");
  std::mt19937 rng(16);
  struct Copy {
    Fn3 fn;
    size_t element;
    const char* name;
  };
  const Copy copies[] = {{&RepMovsb, 1, "rep movsb"},
                         {&RepMovsq, 8, "rep movsq"},
                         {&RepMovsbBackwards, 1, "std; rep movsb"}};
  // (destination, source) offsets in one region, and byte counts.
  static constexpr std::pair<size_t, size_t> kOffsets[] = {
      {100, 9000},   {4093, 10},     {5000, 4999},           {5000, 4997},
      {3, 4096 + 3}, {4096 + 11, 8}, {6000, 6000 - 4096 - 5}};
  static constexpr size_t kBytes[] = {0, 8, 4088, 4096, 4104, 8200};
  uint8_t* region = Harness().Region(0);
  for (const Copy& c : copies)
    for (const auto& [d, s] : kOffsets)
      for (size_t bytes : kBytes) {
        if (std::max(d, s) + bytes > kRegionBytes) continue;
        Fill(region, kRegionBytes, rng);
        const size_t lo_off = std::min(d, s);
        const auto [lo, size] = CheckRange(region + lo_off, std::max(d, s) + bytes - lo_off);
        check.Store(reinterpret_cast<const void*>(c.fn), reinterpret_cast<uint64_t>(region + d),
                    reinterpret_cast<uint64_t>(region + s), bytes / c.element, 0b011, true, lo,
                    size,
                    std::string(c.name) + " dst +" + std::to_string(d) + " src +" +
                        std::to_string(s) + " bytes " + std::to_string(bytes));
      }
  for (size_t start : {0ul, 2ul, 4094ul, 8192ul})
    for (size_t bytes : {4ul, 4092ul, 4100ul, 12000ul}) {
      if (start + bytes > kRegionBytes) continue;
      Fill(region, kRegionBytes, rng);
      uint8_t* dst = region + start;
      const auto [lo, size] = CheckRange(dst, bytes);
      check.Store(reinterpret_cast<const void*>(&RepStosb), reinterpret_cast<uint64_t>(dst),
                  0x1234567890abcdefull, bytes, 0b001, true, lo, size,
                  Describe("rep stosb", dst, bytes));
      check.Store(reinterpret_cast<const void*>(&RepStosd), reinterpret_cast<uint64_t>(dst),
                  0x1234567890abcdefull, bytes / 4, 0b001, true, lo, size,
                  Describe("rep stosd", dst, bytes));
    }
  EXPECT_GT(check.inputs(), 150);
}

void CheckCopyLike(const char* name, bool concatenate, int seed) {
  auto fn = Function<char* (*)(char*, const char*)>(name);
  ASSERT_TRUE(fn);
  FunctionCheck check(name);
  std::mt19937 rng(seed);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const StringPair p = MakePair(placements[i], i, rng, true);
    const size_t len = placements[i].length;
    // strcat: the destination holds a string of a third of the length; the source the rest.
    const size_t head = concatenate ? len / 3 : 0;
    const size_t tail = len - head;
    Fill(p.a, len + 1, rng);
    if (concatenate) p.a[head] = 0;
    std::memmove(p.b, p.b + head, tail);
    p.b[tail] = 0;
    const auto [lo, size] = CheckRange(p.a, len + 1);
    check.Store(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(p.a),
                reinterpret_cast<uint64_t>(p.b), 0, 0b011, true, lo, size,
                Describe("dst", p.a, head) + ", " + Describe("src", p.b, tail, 1));
  }
}

TEST(GlibcStrings, Strcpy) {
  CheckCopyLike("strcpy", false, 15);
}
TEST(GlibcStrings, Stpcpy) {
  CheckCopyLike("stpcpy", false, 16);
}
TEST(GlibcStrings, Strcat) {
  CheckCopyLike("strcat", true, 17);
}

TEST(GlibcStrings, Wmemset) {
  auto fn = Function<wchar_t* (*)(wchar_t*, wchar_t, size_t)>("wmemset");
  ASSERT_TRUE(fn);
  FunctionCheck check("wmemset");
  std::mt19937 rng(18);
  const auto placements = Placements(300, 0, 4);
  for (size_t i = 0; i < placements.size(); ++i) {
    uint8_t* d = Harness().Region(0) + placements[i].offset;
    const size_t n = placements[i].length / 4;
    const wchar_t c = i % 2 ? 0x12345678 : 0;
    const auto [lo, size] = CheckRange(d, n * 4);
    Fill(lo, size, rng);
    check.Store(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(d),
                static_cast<uint32_t>(c), n, 0b001, true, lo, size, Describe("dst", d, n * 4));
  }
}

TEST(GlibcStrings, Wcslen) {
  auto fn = Function<size_t (*)(const wchar_t*)>("wcslen");
  ASSERT_TRUE(fn);
  FunctionCheck check("wcslen");
  std::mt19937 rng(19);
  for (const Placement& pl : Placements(300, 4, 4)) {
    uint8_t* s = Harness().Region(0) + pl.offset;
    const size_t n = pl.length / 4;
    for (size_t k = 0; k < n; ++k) {
      const uint32_t w = 1 + rng() % 0x10ffff;
      std::memcpy(s + 4 * k, &w, 4);
    }
    std::memset(s + 4 * n, 0, 4);
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s), 0, 0,
               fn(reinterpret_cast<const wchar_t*>(s)), Describe("s", s, n * 4));
  }
}

TEST(GlibcStrings, Strstr) {
  auto fn = Function<char* (*)(const char*, const char*)>("strstr");
  ASSERT_TRUE(fn);
  FunctionCheck check("strstr");
  std::mt19937 rng(20);
  const auto placements = Placements(300, 1);
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* h = Harness().Region(0) + pl.offset;
    uint8_t* needle = Harness().Region(1) + kPage + (i * 11) % kPage;
    // A small alphabet makes partial matches common.
    for (size_t k = 0; k < pl.length; ++k) h[k] = static_cast<uint8_t>('a' + rng() % 3);
    h[pl.length] = 0;
    const size_t nl = i % 11;
    for (size_t k = 0; k < nl; ++k) needle[k] = static_cast<uint8_t>('a' + rng() % 3);
    needle[nl] = 0;
    if (i % 3 == 0 && pl.length >= nl) std::memcpy(h + rng() % (pl.length - nl + 1), needle, nl);
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(h),
               reinterpret_cast<uint64_t>(needle), 0,
               reinterpret_cast<uint64_t>(
                   fn(reinterpret_cast<const char*>(h), reinterpret_cast<const char*>(needle))),
               Describe("haystack", h, pl.length) + " needle length " + std::to_string(nl));
  }
}

void CheckSpanLike(const char* name, bool complement, int seed) {
  auto fn = Function<size_t (*)(const char*, const char*)>(name);
  ASSERT_TRUE(fn);
  FunctionCheck check(name);
  std::mt19937 rng(seed);
  const auto placements = Placements(300, 1);
  static constexpr size_t kSetSizes[] = {1, 2, 3, 5, 8, 15, 16, 17, 30};
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& pl = placements[i];
    uint8_t* s = Harness().Region(0) + pl.offset;
    uint8_t* set = Harness().Region(1) + kPage + (i * 13) % kPage;
    const size_t set_size = kSetSizes[i % 9];
    std::vector<uint8_t> members;
    while (members.size() < set_size) {
      const uint8_t b = static_cast<uint8_t>(1 + rng() % 255);
      if (std::find(members.begin(), members.end(), b) == members.end()) members.push_back(b);
    }
    std::memcpy(set, members.data(), set_size);
    set[set_size] = 0;
    auto is_member = [&](uint8_t b) {
      return std::find(members.begin(), members.end(), b) != members.end();
    };
    // strspn: members up to a random point, then anything; strcspn the other way round.
    const size_t stop = pl.length == 0 ? 0 : rng() % (pl.length + 1);
    for (size_t k = 0; k < pl.length; ++k) {
      uint8_t b = 0;
      const bool want_member = (k < stop) != complement;
      do b = k < stop || rng() % 2 ? static_cast<uint8_t>(1 + rng() % 255) : 0;
      while (b == 0 || (k < stop && is_member(b) != want_member));
      s[k] = b;
    }
    s[pl.length] = 0;
    check.Pure(reinterpret_cast<const void*>(fn), reinterpret_cast<uint64_t>(s),
               reinterpret_cast<uint64_t>(set), 0,
               fn(reinterpret_cast<const char*>(s), reinterpret_cast<const char*>(set)),
               Describe("s", s, pl.length) + " set size " + std::to_string(set_size));
  }
}

TEST(GlibcStrings, Strspn) {
  CheckSpanLike("strspn", false, 21);
}
TEST(GlibcStrings, Strcspn) {
  CheckSpanLike("strcspn", true, 22);
}

// The same tests on the variants other CPUs get: glibc's ifuncs pick by the CPU features
// GLIBC_TUNABLES leaves them, so a child process of this test with AVX-512 masked runs the
// avx2 variants, with AVX masked too the sse2/ssse3/sse4.2 ones, and with those masked the
// plain sse2 ones. One test per variant, each on every twentieth input: the three in one, on
// every fifth, took 69-216 s in the sanitizer build, over the suite's per-test limit
// (docs/performance.md, "Test-time budget"); `make check-figures` runs every fifth.
struct Variant {
  const char* name;
  const char* hwcaps;
};

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

class OtherVariantsMatchTheCpu : public ::testing::TestWithParam<Variant> {};

TEST_P(OtherVariantsMatchTheCpu, EveryFunction) {
  if (std::getenv(kVariantVariable)) GTEST_SKIP() << "already in a variant run";
  const Variant& v = GetParam();
  // This test's own program, run again in the variant.
  const auto self = procfs::Procfs::Host().Executable(getpid());
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    setenv("GLIBC_TUNABLES", v.hwcaps, 1);
    setenv(kVariantVariable, v.name, 1);
    setenv(kStrideVariable, pathprof::testing::FiguresOr("5", "20"), 1);
    execl(self->c_str(), "glibc_string_test", "--gtest_filter=GlibcStrings.*",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the " << v.name << " variants failed (see the child's output above)";
}

INSTANTIATE_TEST_SUITE_P(
    GlibcStrings, OtherVariantsMatchTheCpu,
    ::testing::Values(
        Variant{"avx2", "glibc.cpu.hwcaps=-AVX512VL,-AVX512BW"},
        Variant{"sse4", "glibc.cpu.hwcaps=-AVX512VL,-AVX512BW,-AVX2,-AVX"},
        Variant{"sse2", "glibc.cpu.hwcaps=-AVX512VL,-AVX512BW,-AVX2,-AVX,-SSE4_2,-SSE4_1,-SSSE3"}),
    [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pathprof::emulator
