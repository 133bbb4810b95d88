// Coverage report, not a correctness test: runs a set of libc functions (as this CPU's ifuncs
// picked them) in the emulator on a few inputs each and prints, per function, the vector
// instructions it executed and how its windows ended early (with the mnemonic), so that one
// can see which instructions still end windows. It fails only if a pure function's emulated
// result differs from the native one, or a window that reached the return is not exact.
#include <Zydis/Zydis.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "call_harness.h"

namespace pathprof::emulator {
namespace {

using testing::CallHarness;
using testing::EndText;
using testing::kReturnSentinel;
using testing::Libc;

CallHarness& Harness() {
  static CallHarness harness;
  return harness;
}

// The mnemonics of every instruction a window executed: the straight runs between its branch
// events, decoded again here.
void CollectExecuted(const CpuState& start, const EmulatedWindow& w, std::set<std::string>* out) {
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  auto walk = [&](uint64_t from, uint64_t to, bool inclusive) {
    for (uint64_t rip = from; rip < to || (inclusive && rip == to);) {
      ZydisDecodedInstruction insn;
      ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
      if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, reinterpret_cast<const void*>(rip),
                                               ZYDIS_MAX_INSTRUCTION_LENGTH, &insn, ops)))
        return;
      const bool vector =
          insn.avx.vector_length != 0 ||
          (insn.meta.isa_set >= ZYDIS_ISA_SET_SSE && insn.meta.isa_set <= ZYDIS_ISA_SET_SSE4A) ||
          insn.meta.category == ZYDIS_CATEGORY_SSE;
      if (vector) out->insert(ZydisMnemonicGetString(insn.mnemonic));
      if (rip == to) return;
      rip += insn.length;
    }
  };
  uint64_t at = start.rip;
  for (const BranchEvent& e : w.events) {
    walk(at, e.from, true);
    at = e.to;
  }
  if (w.end != EmulationEnd::kUnreadable || w.end_address != kReturnSentinel)
    walk(at, w.end_address, false);
}

struct Case {
  std::string name;
  // Prepares input i and returns the start state; `native` gets the native result (or nullopt
  // when the function has effects beyond rax that the report does not check). An int result
  // is compared in its low 32 bits (the upper half of rax is not part of it).
  std::function<CpuState(int i, std::optional<uint64_t>* native)> prepare;
  bool int_result = false;
};

template <typename Fn>
Fn F(const char* name) {
  return Libc<Fn>(name);
}

uint64_t U(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// A NUL-terminated string of `length` letters at a varying alignment in region r.
char* Text(int r, size_t length, int i, const char* alphabet = "abcdefghij") {
  char* s = reinterpret_cast<char*>(Harness().Region(r) + CallHarness::kPage + (i * 13) % 64);
  const size_t n = std::strlen(alphabet);
  for (size_t k = 0; k < length; ++k) s[k] = alphabet[(k * 7 + i) % n];
  s[length] = 0;
  return s;
}

wchar_t* WideText(int r, size_t length, int i) {
  auto* s = reinterpret_cast<wchar_t*>(Harness().Region(r) + CallHarness::kPage + (i * 4) % 64);
  for (size_t k = 0; k < length; ++k) s[k] = static_cast<wchar_t>(L'a' + (k * 7 + i) % 10);
  s[length] = 0;
  return s;
}

constexpr size_t kLengths[] = {0, 1, 7, 16, 33, 64, 100, 257, 1000};

std::vector<Case> Cases() {
  CallHarness& h = Harness();
  std::vector<Case> cases;
  auto add = [&](const char* name, auto make) {
    static constexpr const char* kIntResults[] = {"strcmp",      "strcasecmp", "strcoll", "strncmp",
                                                  "strncasecmp", "memcmp",     "bcmp",    "wcscmp",
                                                  "wcsncmp",     "wmemcmp"};
    bool int_result = false;
    for (const char* n : kIntResults) int_result = int_result || std::strcmp(n, name) == 0;
    cases.push_back({name, make, int_result});
  };
  using Str1 = uint64_t (*)(const char*);
  using Str2 = uint64_t (*)(const char*, const char*);
  using Str2n = uint64_t (*)(const char*, const char*, size_t);
  // (No malloc: this process is both the emulator and its target, and the emulator's own
  // allocations change the heap the emulated malloc walks.)
  add("strlen", [&h](int i, std::optional<uint64_t>* native) {
    char* s = Text(0, kLengths[i % 9], i);
    *native = F<Str1>("strlen")(s);
    return h.CallState(reinterpret_cast<const void*>(F<Str1>("strlen")), U(s));
  });
  for (const char* name :
       {"strcmp", "strcasecmp", "strstr", "strpbrk", "strspn", "strcspn", "strcoll"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>* native) {
      const size_t len = kLengths[i % 9];
      char* a = Text(0, len, i);
      char* b = Text(1, i % 2 ? len : len / 2 + 1, i + 1, "jihgfedcbaABC");
      if (std::strcmp(name, "strpbrk") == 0 || std::strcmp(name, "strspn") == 0 ||
          std::strcmp(name, "strcspn") == 0)
        b[i % 5 + 1] = 0;
      *native = F<Str2>(name)(a, b);
      return h.CallState(reinterpret_cast<const void*>(F<Str2>(name)), U(a), U(b));
    });
  }
  for (const char* name : {"strncmp", "strncasecmp", "memcmp", "bcmp"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>* native) {
      const size_t len = kLengths[i % 9];
      char* a = Text(0, len, i);
      char* b = Text(1, len, i % 3 ? i : i + 1);
      *native = F<Str2n>(name)(a, b, len);
      return h.CallState(reinterpret_cast<const void*>(F<Str2n>(name)), U(a), U(b), len);
    });
  }
  for (const char* name : {"memchr", "memrchr", "strnlen"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>* native) {
      const size_t len = kLengths[i % 9];
      char* a = Text(0, len, i);
      using Fn = uint64_t (*)(const char*, uint64_t, uint64_t);
      const bool strnlen = std::strcmp(name, "strnlen") == 0;
      const uint64_t arg1 = strnlen ? len / 2 + 3 : 'c', arg2 = len;
      *native = F<Fn>(name)(a, arg1, arg2);
      return h.CallState(reinterpret_cast<const void*>(F<Fn>(name)), U(a), arg1, arg2);
    });
  }
  for (const char* name : {"strchr", "strrchr", "strchrnul", "rawmemchr", "index", "rindex"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>* native) {
      char* a = Text(0, kLengths[i % 9], i);
      using Fn = uint64_t (*)(const char*, int);
      const int c = std::strcmp(name, "rawmemchr") == 0 ? 0 : 'e';
      *native = F<Fn>(name)(a, c);
      return h.CallState(reinterpret_cast<const void*>(F<Fn>(name)), U(a), c);
    });
  }
  for (const char* name :
       {"wcslen", "wcsnlen", "wcschr", "wcsrchr", "wcscmp", "wcsncmp", "wmemchr", "wmemcmp"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>* native) {
      const size_t len = kLengths[i % 9];
      wchar_t* a = WideText(0, len, i);
      wchar_t* b = WideText(1, len, i % 2 ? i : i + 3);
      using Fn = uint64_t (*)(uint64_t, uint64_t, uint64_t);
      uint64_t a1 = U(b), a2 = len;
      if (!std::strcmp(name, "wcsnlen")) a1 = len / 2 + 1;
      if (!std::strcmp(name, "wcschr") || !std::strcmp(name, "wcsrchr") ||
          !std::strcmp(name, "wmemchr"))
        a1 = L'e';
      *native = F<Fn>(name)(U(a), a1, a2);
      return h.CallState(reinterpret_cast<const void*>(F<Fn>(name)), U(a), a1, a2);
    });
  }
  // Functions that store: the window's stores are not checked here (glibc_string_test does).
  for (const char* name : {"memcpy", "memmove", "mempcpy", "memset", "strcpy", "stpcpy", "strncpy",
                           "stpncpy", "strcat", "strncat", "memccpy", "wmemset", "wcscpy"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>*) {
      const size_t len = kLengths[i % 9];
      char* src = Text(1, len, i);
      // Wide-character destinations must be 4-aligned (glibc's wcscpy faults otherwise, and so
      // does the emulator).
      const size_t align = name[0] == 'w' ? 4 : 1;
      uint8_t* dst = h.Region(0) + CallHarness::kPage + (i * 5) % 64 / align * align;
      dst[0] = 0;
      using Fn = uint64_t (*)(uint64_t, uint64_t, uint64_t);
      uint64_t a1 = U(src);
      if (!std::strcmp(name, "memset") || !std::strcmp(name, "wmemset")) a1 = 0x41;
      if (!std::strcmp(name, "wcscpy")) a1 = U(WideText(1, len, i));
      CpuState s = h.CallState(reinterpret_cast<const void*>(F<Fn>(name)), U(dst), a1, len);
      if (!std::strcmp(name, "memccpy")) s.gpr[kRdx] = 'e', s.gpr[kRcx] = len;
      return s;
    });
  }
  // Number parsing and formatting: integer code, with some vector state (printf's varargs).
  add("strtol", [&h](int i, std::optional<uint64_t>* native) {
    char* s = Text(0, 0, i);
    std::snprintf(s, 64, "  %d", i * 7919 - 20000);
    using Fn = uint64_t (*)(const char*, char**, int);
    *native = F<Fn>("strtol")(s, nullptr, 10);
    return h.CallState(reinterpret_cast<const void*>(F<Fn>("strtol")), U(s), 0, 10);
  });
  add("strtod", [&h](int i, std::optional<uint64_t>*) {
    char* s = Text(0, 0, i);
    std::snprintf(s, 64, "%d.%de%d", i * 31, i * 7, i % 20 - 10);
    using Fn = uint64_t (*)(const char*, char**);
    return h.CallState(reinterpret_cast<const void*>(F<Fn>("strtod")), U(s), 0);
  });
  add("snprintf", [&h](int i, std::optional<uint64_t>*) {
    char* out = reinterpret_cast<char*>(h.Region(0) + CallHarness::kPage);
    char* format = Text(1, 0, i);
    std::strcpy(format, i % 2 ? "%d and %s: %x" : "%.3f %g %e");
    using Fn = uint64_t (*)(char*, size_t, const char*);
    CpuState s =
        h.CallState(reinterpret_cast<const void*>(F<Fn>("snprintf")), U(out), 200, U(format));
    s.gpr[kRcx] = static_cast<uint64_t>(i * 12345);
    s.gpr[8] = U(Text(2, 20, i));
    s.gpr[9] = 0xbeef;
    const double values[3] = {3.14159 * i, 1e-300 * i, -2.5e10};
    for (int k = 0; k < 3; ++k) std::memcpy(s.zmm[k].data(), &values[k], 8);
    s.gpr[kRax] = i % 2 ? 0 : 3;  // vector registers used by the varargs
    return s;
  });
  for (const char* name : {"sqrt", "floor", "ceil", "exp", "log", "pow", "sin", "cos", "atan2",
                           "fmod", "round", "lround"}) {
    add(name, [&h, name](int i, std::optional<uint64_t>*) {
      using Fn = uint64_t (*)();
      CpuState s = h.CallState(
          reinterpret_cast<const void*>(F<Fn>(name) ? F<Fn>(name) : Libc<Fn>(name, "libm.so.6")));
      const double a = 0.37 + i * 1.75, b = 1.5 + i * 0.25;
      std::memcpy(s.zmm[0].data(), &a, 8);
      std::memcpy(s.zmm[1].data(), &b, 8);
      return s;
    });
  }
  return cases;
}

TEST(VectorCoverage, ReportsWhichMnemonicsEndWindows) {
  CallHarness& h = Harness();
  const uint64_t loads_before = h.stats().vector_loads;
  std::map<std::string, int> all_ends;
  for (const Case& c : Cases()) {
    std::map<std::string, int> ends;
    std::set<std::string> executed;
    int complete = 0, runs = 0;
    for (int i = 0; i < 18; ++i) {
      std::optional<uint64_t> native;
      const CpuState start = c.prepare(i, &native);
      if (start.rip == 0) break;  // not in this libc
      const EmulatedWindow w = h.Emulate(start);
      ++runs;
      CollectExecuted(start, w, &executed);
      if (w.end_address == kReturnSentinel) {
        ++complete;
        if (native) {
          const uint64_t bits = c.int_result ? 0xffffffffu : ~0ull;
          EXPECT_EQ(w.state.gpr[kRax] & bits, *native & bits) << c.name << " input " << i;
        }
      } else {
        ++ends[EndText(w).substr(0, EndText(w).find(" at "))];
      }
    }
    std::string line = "[ coverage ] " + c.name + ": " + std::to_string(complete) + "/" +
                       std::to_string(runs) + " returned";
    for (const auto& [why, n] : ends) {
      line += "; " + why + " x" + std::to_string(n);
      all_ends[why] += n;
    }
    std::printf("%s\n", line.c_str());
    std::string vec = "             vector instructions executed:";
    for (const std::string& m : executed) vec += " " + m;
    std::printf("%s\n", vec.c_str());
  }
  std::printf("[ coverage ] early ends over all functions:");
  for (const auto& [why, n] : all_ends) std::printf(" %s x%d;", why.c_str(), n);
  std::printf("\n");
  EXPECT_GT(h.stats().vector_loads, loads_before);
}

}  // namespace
}  // namespace pathprof::emulator
