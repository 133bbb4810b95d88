// Which pages a snapshot holds (snapshot_pages.h), and how far the emulator gets on one: a
// hand-assembled program over a guest of plain pages reads the stack near and far, read-only
// data and the heap, one taken branch after each read, so each policy's window length is known.
#include "snapshot_pages.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace pathprof::stepping {
namespace {

using emulator::CpuState;
using emulator::Guest;
using emulator::WindowEmulator;

constexpr uint64_t kCode = 0x400000;    // stable, executable
constexpr uint64_t kRodata = 0x600000;  // stable, not executable
constexpr uint64_t kHeap = 0x700000;    // neither
constexpr uint64_t kStackLow = 0x10000000, kStackHigh = 0x10100000;
constexpr uint64_t kRsp = 0x100f0040;

SnapshotStack Stack() {
  return {kRsp, kStackLow, kStackHigh};
}

// Pages from a table; a page not in it is unmapped.
class PlainGuest : public Guest {
 public:
  struct Page {
    std::array<uint8_t, kPageSize> bytes{};
    bool stable = false, executable = false;
  };
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    auto it = pages.find(page);
    if (it == pages.end()) return false;
    std::memcpy(out, it->second.bytes.data(), kPageSize);
    *stable = it->second.stable;
    return true;
  }
  bool PageExecutable(uint64_t page) override {
    auto it = pages.find(page);
    return it != pages.end() && it->second.executable;
  }
  bool LoadVectorState(CpuState*) override { return false; }
  Page& At(uint64_t page) { return pages[page]; }
  std::map<uint64_t, Page> pages;
};

// Code at kCode, the stack's pages filled with their own page number's low byte, the heap's
// first word 5.
PlainGuest Machine(const std::vector<uint8_t>& code) {
  PlainGuest g;
  PlainGuest::Page& c = g.At(kCode);
  c.stable = c.executable = true;
  std::memcpy(c.bytes.data(), code.data(), code.size());
  g.At(kRodata).stable = true;
  g.At(kHeap).bytes[0] = 5;
  for (uint64_t p = kStackLow; p < kStackHigh; p += Guest::kPageSize)
    g.At(p).bytes.fill(static_cast<uint8_t>(p >> 12));
  return g;
}

CpuState Start() {
  CpuState s;
  s.rip = kCode;
  s.gpr[emulator::kRsp] = kRsp;
  return s;
}

// Each read followed by a taken jump, then a jump to itself until the window is full:
//   mov rax, [rsp+8]; jmp; mov rax, [rsp+0x5000]; jmp; mov rax, [0x600000]; jmp;
//   mov rax, [0x700000]; jmp; jmp $
const std::vector<uint8_t> kReads = {
    0x48, 0x8b, 0x44, 0x24, 0x08, 0xeb, 0x00,                    // stack, its own page
    0x48, 0x8b, 0x84, 0x24, 0x00, 0x50, 0x00, 0x00, 0xeb, 0x00,  // stack, 20 KiB up
    0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x60, 0x00, 0xeb, 0x00,  // read-only data
    0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x70, 0x00, 0xeb, 0x00,  // heap
    0xeb, 0xfe};

uint32_t Length(const SnapshotPolicy& policy, const HintPages* hints,
                SnapshotGuest::Mode mode = SnapshotGuest::Mode::kEnd, uint8_t poison = 0,
                const std::vector<uint8_t>& code = kReads) {
  PlainGuest live = Machine(code);
  SnapshotGuest guest(live, policy, Stack(), hints, kCode, mode, poison);
  WindowEmulator emulator;
  const emulator::EmulatedWindow w = emulator.Run(Start(), guest);
  if (mode != SnapshotGuest::Mode::kPoison) return w.taken;
  PlainGuest all = Machine(code);
  WindowEmulator live_emulator;
  return TakenInCommon(live_emulator.Run(Start(), all), w);
}

TEST(SnapshotPages, ClassifiesByStabilityAndStackReach) {
  const SnapshotStack s = Stack();
  EXPECT_EQ(ClassifySnapshotPage(kCode, true, true, s).cls, SnapshotPageClass::kCode);
  EXPECT_EQ(ClassifySnapshotPage(kRodata, true, false, s).cls, SnapshotPageClass::kImage);
  EXPECT_EQ(ClassifySnapshotPage(kHeap, false, false, s).cls, SnapshotPageClass::kOther);
  // The page holding rsp ends 0xfc0 bytes above it; the one below ends at or below rsp.
  const SnapshotPage at = ClassifySnapshotPage(0x100f0000, false, false, s);
  EXPECT_EQ(at.cls, SnapshotPageClass::kStack);
  EXPECT_EQ(at.stack_reach, 0xfc0u);
  EXPECT_EQ(ClassifySnapshotPage(0x100ef000, false, false, s).stack_reach, 0u);
  EXPECT_EQ(ClassifySnapshotPage(0x100f3000, false, false, s).stack_reach, 0x3fc0u);
  // Outside the stack mapping: not stack, however near.
  EXPECT_EQ(ClassifySnapshotPage(kStackHigh, false, false, s).cls, SnapshotPageClass::kOther);
}

TEST(SnapshotPages, StackCopyHoldsWholePagesWithinItsReach) {
  SnapshotPolicy p{"stack16", 16 * 1024, false, 0};
  const SnapshotStack s = Stack();
  // rsp + 16 KiB = 0x100f4040: the page 0x100f3000 ends below it, 0x100f4000 does not.
  EXPECT_TRUE(SnapshotHolds(p, ClassifySnapshotPage(0x100f3000, false, false, s), false));
  EXPECT_FALSE(SnapshotHolds(p, ClassifySnapshotPage(0x100f4000, false, false, s), false));
  EXPECT_TRUE(SnapshotHolds(p, ClassifySnapshotPage(0x100e0000, false, false, s), false));
  EXPECT_TRUE(SnapshotHolds(p, ClassifySnapshotPage(kCode, true, true, s), false));
  EXPECT_FALSE(SnapshotHolds(p, ClassifySnapshotPage(kRodata, true, false, s), false));
  // Hints count only where the policy has them.
  EXPECT_FALSE(SnapshotHolds(p, ClassifySnapshotPage(kHeap, false, false, s), true));
  p.hint_pages = 4;
  EXPECT_TRUE(SnapshotHolds(p, ClassifySnapshotPage(kHeap, false, false, s), true));
  EXPECT_FALSE(SnapshotHolds(p, ClassifySnapshotPage(kHeap, false, false, s), false));
}

TEST(SnapshotPages, HintPagesKeepTheMostRecentPerCodePage) {
  HintPages h(2);
  h.Learn(kCode, 0xa000);
  h.Learn(kCode, 0xb000);
  h.Learn(kCode, 0xa000);  // again: now the most recent
  h.Learn(kCode, 0xc000);  // 0xb000, the oldest, goes
  EXPECT_TRUE(h.Holds(kCode, 0xa000));
  EXPECT_TRUE(h.Holds(kCode, 0xc000));
  EXPECT_FALSE(h.Holds(kCode, 0xb000));
  EXPECT_FALSE(h.Holds(kCode + Guest::kPageSize, 0xa000));
}

TEST(SnapshotPages, WindowEndsAtTheFirstReadThePolicyDoesNotHold) {
  EXPECT_EQ(Length({"stack16", 16 * 1024, false, 0}, nullptr), 1u);
  EXPECT_EQ(Length({"stack64", 64 * 1024, false, 0}, nullptr), 2u);
  EXPECT_EQ(Length({"stack64+image", 64 * 1024, true, 0}, nullptr), 3u);
  HintPages hints(4);
  const SnapshotPolicy hinted{"hints4", 64 * 1024, true, 4};
  EXPECT_EQ(Length(hinted, &hints), 3u);
  hints.Learn(kCode + Guest::kPageSize, kHeap);  // learned in another code page: no use here
  EXPECT_EQ(Length(hinted, &hints), 3u);
  hints.Learn(kCode, kHeap);
  EXPECT_EQ(Length(hinted, &hints), 32u);
}

TEST(SnapshotPages, RecordsEveryReadWithItsClass) {
  PlainGuest live = Machine(kReads);
  const SnapshotPolicy p{"stack64", 64 * 1024, false, 0};
  SnapshotGuest guest(live, p, Stack(), nullptr, kCode, SnapshotGuest::Mode::kServe);
  WindowEmulator emulator;
  EXPECT_EQ(emulator.Run(Start(), guest).taken, 32u);  // served: the live window
  std::vector<std::pair<uint64_t, bool>> got;
  for (const SnapshotGuest::Read& r : guest.reads()) got.push_back({r.page.page, r.held});
  const std::vector<std::pair<uint64_t, bool>> want = {
      {kCode, true}, {0x100f0000, true}, {0x100f5000, true}, {kRodata, false}, {kHeap, false}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(guest.first_unheld(), kRodata);
}

TEST(SnapshotPages, PoisonKeepsTheCopiedBytesOfAStackPage) {
  PlainGuest live = Machine(kReads);
  const SnapshotPolicy p{"stack16", 16 * 1024, false, 0};
  SnapshotGuest guest(live, p, Stack(), nullptr, kCode, SnapshotGuest::Mode::kPoison, 0xee);
  std::array<uint8_t, Guest::kPageSize> page{};
  bool stable = true;
  // The page holding rsp: dead stack below the red zone (rsp - 128 = 0x100effc0 is in the
  // page below), so every byte of it is copied.
  ASSERT_TRUE(guest.ReadPage(0x100f0000, page.data(), &stable));
  EXPECT_EQ(page[0], 0xf0);
  // The page below: its last 0x40 bytes are the red zone, the rest dead stack.
  ASSERT_TRUE(guest.ReadPage(0x100ef000, page.data(), &stable));
  EXPECT_EQ(page[0xfbf], 0xee);
  EXPECT_EQ(page[0xfc0], 0xef);
  // The copy's top (rsp + 16 KiB = 0x100f4040) is 0x40 bytes into this page.
  ASSERT_TRUE(guest.ReadPage(0x100f4000, page.data(), &stable));
  EXPECT_FALSE(stable);
  EXPECT_EQ(page[0x3f], 0xf4);
  EXPECT_EQ(page[0x40], 0xee);
  // Read-only data the policy does not hold: all poison, and not to be kept.
  stable = true;
  ASSERT_TRUE(guest.ReadPage(kRodata, page.data(), &stable));
  EXPECT_FALSE(stable);
  EXPECT_EQ(page[0], 0xee);
  EXPECT_FALSE(guest.ReadPage(0x900000, page.data(), &stable));  // unmapped stays unreadable
}

TEST(SnapshotPages, PoisonedWindowRunsOnUntilAnUnknownByteSteersABranch) {
  // mov rax, [0x700000]; jmp; jmp; test rax, rax; jnz +0; jmp $ — the heap word is 5.
  const std::vector<uint8_t> code = {0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x70, 0x00, 0xeb, 0x00,
                                     0xeb, 0x00, 0x48, 0x85, 0xc0, 0x75, 0x00, 0xeb, 0xfe};
  const SnapshotPolicy p{"stack64+image", 64 * 1024, true, 0};
  EXPECT_EQ(Length(p, nullptr, SnapshotGuest::Mode::kEnd, 0, code), 0u);
  // Zero poison: jnz falls through where the live window jumped.
  EXPECT_EQ(Length(p, nullptr, SnapshotGuest::Mode::kPoison, 0x00, code), 2u);
  // All-ones poison is non-zero, as 5 is: the branch goes the live way.
  EXPECT_EQ(Length(p, nullptr, SnapshotGuest::Mode::kPoison, 0xff, code), 32u);
}

TEST(SnapshotPages, TrackedWindowEndsWhereAnUnknownByteSteersIt) {
  // The same program: tracked (a partial guest), the load of the unheld heap word is not the
  // end, and the jnz it steers is, whatever the poison: 2 taken branches, never 32.
  const std::vector<uint8_t> code = {0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x70, 0x00, 0xeb, 0x00,
                                     0xeb, 0x00, 0x48, 0x85, 0xc0, 0x75, 0x00, 0xeb, 0xfe};
  const SnapshotPolicy p{"stack64+image", 64 * 1024, true, 0};
  for (uint8_t poison : {0x00, 0xff}) {
    PlainGuest live = Machine(code);
    SnapshotGuest guest(live, p, Stack(), nullptr, kCode, SnapshotGuest::Mode::kTrack, poison);
    WindowEmulator emulator;
    const emulator::EmulatedWindow w = emulator.Run(Start(), guest);
    EXPECT_EQ(w.taken, 2u);
    EXPECT_EQ(w.end, emulator::EmulationEnd::kNotInSnapshot);
    EXPECT_EQ(w.end_address, kCode + 15);  // the jnz
  }
  // Held by a hint: the window runs its 32.
  HintPages hints(4);
  hints.Learn(kCode, kHeap);
  EXPECT_EQ(Length({"hints4", 64 * 1024, true, 4}, &hints, SnapshotGuest::Mode::kTrack, 0, code),
            32u);
}

TEST(SnapshotPages, TrackingMarksWhatTheCopiesDoNotHold) {
  PlainGuest live = Machine(kReads);
  const SnapshotPolicy p{"stack16", 16 * 1024, false, 0};
  SnapshotGuest guest(live, p, Stack(), nullptr, kCode, SnapshotGuest::Mode::kTrack, 0xee);
  guest.HoldAlso({{kHeap + 0x100, kHeap + 0x180}});
  EXPECT_TRUE(guest.Partial());
  std::array<uint8_t, Guest::kPageSize> page{}, unheld{};
  bool stable = true;
  // The page below the stack pointer's: the red zone (its last 0x40 bytes) is held, the dead
  // stack below it is not.
  ASSERT_TRUE(guest.ReadPage(0x100ef000, page.data(), &stable));
  ASSERT_TRUE(guest.UnheldBytes(0x100ef000, unheld.data()));
  EXPECT_EQ(unheld[0xfbf], 1);
  EXPECT_EQ(unheld[0xfc0], 0);
  // The page holding rsp: all of it in the copy.
  unheld.fill(0);
  ASSERT_TRUE(guest.ReadPage(0x100f0000, page.data(), &stable));
  EXPECT_FALSE(guest.UnheldBytes(0x100f0000, unheld.data()));
  // The heap: only what the register copy holds.
  ASSERT_TRUE(guest.ReadPage(kHeap, page.data(), &stable));
  ASSERT_TRUE(guest.UnheldBytes(kHeap, unheld.data()));
  EXPECT_EQ(unheld[0xff], 1);
  EXPECT_EQ(unheld[0x100], 0);
  EXPECT_EQ(unheld[0x17f], 0);
  EXPECT_EQ(unheld[0x180], 1);
  EXPECT_FALSE(stable);
}

}  // namespace
}  // namespace pathprof::stepping
