// The emulator runs real compiled functions of this test (integer code) to their return and
// must get the result the CPU gets, with the branch events the code retires.
#include "pathprof/emulator/window_emulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "self_guest.h"

namespace pathprof::emulator {
namespace {

using testing::Call;
using testing::kReturnSentinel;
using testing::SelfGuest;

#define NATIVE extern "C" __attribute__((noinline, no_sanitize("address", "undefined")))

NATIVE uint64_t Collatz(uint64_t n) {
  uint64_t steps = 0;
  while (n != 1) {
    n = (n & 1) ? 3 * n + 1 : n / 2;
    ++steps;
  }
  return steps;
}

NATIVE int64_t MixedArithmetic(int64_t a, int64_t b, int64_t c) {
  int64_t acc = 0;
  for (int64_t i = 0; i < 40; ++i) {
    acc += (a * i) ^ (b >> (i & 7));
    acc -= c % (i + 3);
    acc = (acc << 3) | (static_cast<uint64_t>(acc) >> 61);
    if (acc < 0) acc = -acc / 3;
    const uint32_t narrow = static_cast<uint32_t>(acc) * 2654435761u;
    acc += static_cast<int16_t>(narrow >> 7);
    acc += __builtin_popcountll(static_cast<uint64_t>(acc)) + __builtin_ctzll(acc | 1);
  }
  return acc;
}

NATIVE uint64_t SortAndHash(uint32_t* v, uint64_t n, uint64_t) {
  // Insertion sort in place (stores), then FNV-1a over the bytes.
  for (uint64_t i = 1; i < n; ++i) {
    const uint32_t x = v[i];
    uint64_t j = i;
    while (j > 0 && v[j - 1] > x) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const uint8_t*>(v);
  for (uint64_t i = 0; i < n * 4; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

EmulatedWindow RunToReturn(Call& call, SelfGuest& guest) {
  EmulatorLimits limits;
  limits.window_taken = 1u << 30;
  limits.max_instructions = 10'000'000;
  WindowEmulator emulator(limits);
  return emulator.Run(call.state, guest);
}

TEST(WindowEmulator, CollatzMatchesTheCpu) {
  for (uint64_t n : {1ull, 7ull, 27ull, 97ull, 871ull}) {
    SelfGuest guest;
    Call call(reinterpret_cast<const void*>(&Collatz), n);
    const EmulatedWindow w = RunToReturn(call, guest);
    EXPECT_EQ(w.end, EmulationEnd::kUnreadable) << EmulationEndName(w.end);
    EXPECT_EQ(w.end_address, kReturnSentinel);
    EXPECT_EQ(w.state.gpr[kRax], Collatz(n)) << n;
    ASSERT_FALSE(w.events.empty());
    EXPECT_EQ(w.events.back().kind, BranchKind::kReturn);
    EXPECT_EQ(w.events.back().to, kReturnSentinel);
    // One conditional per loop test at least: the loop ran Collatz(n) times.
    const auto conditionals = std::count_if(w.events.begin(), w.events.end(), [](auto& e) {
      return e.kind == BranchKind::kConditional;
    });
    EXPECT_GE(static_cast<uint64_t>(conditionals), Collatz(n));
  }
}

TEST(WindowEmulator, MixedArithmeticMatchesTheCpu) {
  for (int64_t a : {1, -7, 123456789}) {
    SelfGuest guest;
    Call call(reinterpret_cast<const void*>(&MixedArithmetic), static_cast<uint64_t>(a), 99991,
              static_cast<uint64_t>(-5 * a));
    const EmulatedWindow w = RunToReturn(call, guest);
    EXPECT_EQ(w.end_address, kReturnSentinel)
        << EmulationEndName(w.end) << " " << MnemonicName(w.mnemonic);
    EXPECT_EQ(static_cast<int64_t>(w.state.gpr[kRax]), MixedArithmetic(a, 99991, -5 * a));
  }
}

TEST(WindowEmulator, StoresStayInTheWindowAndTheTargetIsUnchanged) {
  std::vector<uint32_t> data(200);
  for (uint32_t i = 0; i < data.size(); ++i) data[i] = (i * 7919u) % 1009u;
  const std::vector<uint32_t> before = data;
  SelfGuest guest;
  Call call(reinterpret_cast<const void*>(&SortAndHash), reinterpret_cast<uint64_t>(data.data()),
            data.size());
  const EmulatedWindow w = RunToReturn(call, guest);
  EXPECT_EQ(w.end_address, kReturnSentinel) << EmulationEndName(w.end);
  EXPECT_EQ(data, before) << "the emulator wrote to the target";
  std::vector<uint32_t> copy = data;
  EXPECT_EQ(w.state.gpr[kRax], SortAndHash(copy.data(), copy.size(), 0));
}

TEST(WindowEmulator, EndsAfterWTakenBranchesWithTheInstructionCounts) {
  SelfGuest guest;
  Call call(reinterpret_cast<const void*>(&Collatz), 871);
  WindowEmulator emulator;  // W = 32
  const EmulatedWindow w = emulator.Run(call.state, guest);
  EXPECT_EQ(w.end, EmulationEnd::kComplete);
  EXPECT_EQ(w.taken, 32u);
  EXPECT_TRUE(w.events.back().taken);
  EXPECT_EQ(w.end_address, w.events.back().to);
  uint64_t sum = 0;
  for (const auto& e : w.events) sum += e.instructions;
  EXPECT_EQ(sum, w.instructions);  // the window ends right after its last taken branch
  // A second window from the same state reads nothing new for code on... (pages not stable
  // here) and gives the same events: the emulator is deterministic.
  const EmulatedWindow again = emulator.Run(call.state, guest);
  EXPECT_EQ(again.events, w.events);
}

TEST(WindowEmulator, UnreadableCodeEndsTheWindowAtOnce) {
  SelfGuest guest;
  CpuState s;
  s.rip = 0x1000;
  WindowEmulator emulator;
  const EmulatedWindow w = emulator.Run(s, guest);
  EXPECT_EQ(w.end, EmulationEnd::kUnreadable);
  EXPECT_TRUE(w.events.empty());
  EXPECT_EQ(w.instructions, 0u);
}

}  // namespace
}  // namespace pathprof::emulator
