// Windows over a partial guest (a snapshot: Guest::Partial): bytes the guest does not hold are
// unknown, what is computed from them is unknown, and the window ends exactly where a branch
// condition, a jump target, an address or a faulting operand depends on one - not at the load
// (what a window that ended at the first unheld read would do) and not later (a wrong window).
// Each case runs twice, the unheld bytes reading 0x00 and then 0xff: the windows must be equal,
// and each case says where its window ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace pathprof::emulator {
namespace {

constexpr uint64_t kCode = 0x400000;
constexpr uint64_t kHeld = 0x600000;    // data the snapshot holds (zeros)
constexpr uint64_t kUnheld = 0x700000;  // data it does not: every byte unknown
constexpr uint64_t kHalf = 0x701000;    // the first half held (zeros), the second not
constexpr uint64_t kStack = 0x7ff000;   // the stack page, held (zeros)
constexpr uint64_t kPage = Guest::kPageSize;

class PartialGuest : public Guest {
 public:
  PartialGuest(std::vector<uint8_t> code, uint8_t poison, bool vectors, uint16_t unheld_registers)
      : code_(std::move(code)), poison_(poison), vectors_(vectors), unheld_(unheld_registers) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    *stable = false;
    if (page == kCode) {
      std::memset(out, 0xcc, kPage);
      std::memcpy(out, code_.data(), code_.size());
      *stable = true;
      return true;
    }
    if (page == kHeld || page == kStack) return std::memset(out, 0, kPage), true;
    if (page == kUnheld) return std::memset(out, poison_, kPage), true;
    if (page == kHalf) {
      std::memset(out, 0, kPage / 2);
      std::memset(out + kPage / 2, poison_, kPage / 2);
      return true;
    }
    return false;
  }
  bool PageWritable(uint64_t page) override { return page != kCode; }
  bool PageExecutable(uint64_t page) override { return page == kCode; }
  bool LoadVectorState(CpuState* state) override {
    if (!vectors_) return false;
    for (auto& z : state->zmm) z.fill(0);
    return true;
  }
  bool Partial() override { return true; }
  bool UnheldBytes(uint64_t page, uint8_t* unheld) override {
    if (page == kUnheld) return std::memset(unheld, 1, kPage), true;
    if (page == kHalf) return std::memset(unheld + kPage / 2, 1, kPage / 2), true;
    return false;
  }
  uint16_t UnheldRegisters() override { return unheld_; }

 private:
  std::vector<uint8_t> code_;
  uint8_t poison_;
  bool vectors_;
  uint16_t unheld_;
};

// The snippet's bytes, then `jmp $` (each turn a taken branch) until the window's W.
std::vector<uint8_t> WithLoop(std::vector<uint8_t> snippet) {
  snippet.push_back(0xeb);
  snippet.push_back(0xfe);
  return snippet;
}

struct Case {
  EmulatedWindow w;
  uint64_t loop = 0;  // the address of the closing jmp $
};

// Every case starts at kCode with rsi -> kUnheld, rdi -> kHeld, rbx -> kHalf and the stack
// pointer mid-page, and its window is 4 taken branches.
CpuState Start() {
  CpuState start;
  start.rip = kCode;
  start.gpr[kRsi] = kUnheld;
  start.gpr[kRdi] = kHeld;
  start.gpr[kRbx] = kHalf;
  start.gpr[kRsp] = kStack + 0x800;
  return start;
}
EmulatorLimits Limits() {
  EmulatorLimits limits;
  limits.window_taken = 4;
  return limits;
}

// Runs `snippet` from Start() under both poisons, and checks the two windows agree.
Case RunBoth(const std::vector<uint8_t>& snippet, bool vectors = true, uint16_t unheld = 0) {
  const CpuState start = Start();
  const EmulatorLimits limits = Limits();
  std::vector<EmulatedWindow> runs;
  for (uint8_t poison : {0x00, 0xff}) {
    PartialGuest guest(WithLoop(snippet), poison, vectors, unheld);
    WindowEmulator emulator(limits);
    runs.push_back(emulator.Run(start, guest));
  }
  EXPECT_EQ(runs[0].events, runs[1].events);
  EXPECT_EQ(runs[0].end, runs[1].end);
  EXPECT_EQ(runs[0].end_address, runs[1].end_address);
  return {runs[0], kCode + snippet.size()};
}

// mov rax, [rsi] (unknown), then what follows.
std::vector<uint8_t> LoadUnknown(std::vector<uint8_t> rest) {
  std::vector<uint8_t> s(3 + rest.size());
  s[0] = 0x48, s[1] = 0x8b, s[2] = 0x06;
  std::copy(rest.begin(), rest.end(), s.begin() + 3);
  return s;
}

TEST(UnknownBytes, AnUnknownValueThatSteersNothingLetsTheWindowRunOn) {
  // mov rax, [rsi]; add rax, 1; mov [rdi], rax: computed and stored, never branched on.
  const Case c = RunBoth(LoadUnknown({0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x07}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.taken, 4u);
}

TEST(UnknownBytes, ABranchOnAnUnknownValueEndsTheWindowAtTheBranch) {
  // mov rax, [rsi]; test rax, rax; jz +0
  const Case c = RunBoth(LoadUnknown({0x48, 0x85, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 6);  // the jz, not the load and not past it
  EXPECT_TRUE(c.w.events.empty());
}

TEST(UnknownBytes, AnAddressFromAnUnknownValueEndsTheWindowAtTheAccess) {
  // mov rax, [rsi]; nop; mov rcx, [rax]
  const Case c = RunBoth(LoadUnknown({0x90, 0x48, 0x8b, 0x08}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(c.w.end_address, kCode + 4);
}

TEST(UnknownBytes, WholeWritesMakeARegisterKnownAndPartialOnesDoNot) {
  // xor eax, eax (an idiom: no inputs); test rax, rax; jz +0 -> runs on, the jz taken.
  Case c = RunBoth(LoadUnknown({0x31, 0xc0, 0x48, 0x85, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
  ASSERT_FALSE(c.w.events.empty());
  EXPECT_TRUE(c.w.events[0].taken);
  // mov eax, 0 (a 32-bit write zeroes the rest): known too.
  c = RunBoth(LoadUnknown({0xb8, 0, 0, 0, 0, 0x48, 0x85, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
  // mov al, 0 keeps the other 56 bits unknown: test rax, rax steers the jz.
  c = RunBoth(LoadUnknown({0xb0, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 2 + 3);
  // ... but test al, al reads only the known byte... of a register tracked whole: the window
  // ends there too (shorter, never wrong).
  c = RunBoth(LoadUnknown({0xb0, 0x00, 0x84, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
}

TEST(UnknownBytes, StoresCarryKnownnessByteForByte) {
  // mov qword [rsi], 5; mov rax, [rsi]; cmp rax, 5; je +0: the store made those bytes known.
  Case c =
      RunBoth({0x48, 0xc7, 0x06, 5, 0, 0, 0, 0x48, 0x8b, 0x06, 0x48, 0x83, 0xf8, 0x05, 0x74, 0x00});
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete) << EmulationEndName(c.w.end);
  ASSERT_FALSE(c.w.events.empty());
  EXPECT_TRUE(c.w.events[0].taken);
  // mov dword [rsi], 5 then a qword load: its upper four bytes are still unknown.
  c = RunBoth({0xc7, 0x06, 5, 0, 0, 0, 0x48, 0x8b, 0x06, 0x48, 0x83, 0xf8, 0x05, 0x74, 0x00});
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  // An unknown value stored to held memory makes those bytes unknown:
  // mov rax, [rsi]; mov [rdi], rax; mov rcx, [rdi]; test rcx, rcx; jz +0
  c = RunBoth(LoadUnknown({0x48, 0x89, 0x07, 0x48, 0x8b, 0x0f, 0x48, 0x85, 0xc9, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 3 + 3 + 3);
  // A page held in half: mov rax, [rbx] (held) branches fine; mov rax, [rbx+0x800] does not.
  c = RunBoth({0x48, 0x8b, 0x03, 0x48, 0x85, 0xc0, 0x74, 0x00});
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
  c = RunBoth({0x48, 0x8b, 0x83, 0x00, 0x08, 0, 0, 0x48, 0x85, 0xc0, 0x74, 0x00});
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
}

TEST(UnknownBytes, FlagsSetToConstantsStayKnown) {
  // and rax, rax clears CF and OF whatever rax holds: jc is known, jz is not.
  Case c = RunBoth(LoadUnknown({0x48, 0x21, 0xc0, 0x72, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
  ASSERT_FALSE(c.w.events.empty());
  EXPECT_FALSE(c.w.events[0].taken);
  c = RunBoth(LoadUnknown({0x48, 0x21, 0xc0, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  // shl by cl = 0 leaves the flags as they were: after a compare of an unknown value they stay
  // unknown though the shift's inputs are known. cmp rax, 0; mov ecx, 0; shl rdx, cl; jz +0
  c = RunBoth(
      LoadUnknown({0x48, 0x83, 0xf8, 0x00, 0xb9, 0, 0, 0, 0, 0x48, 0xd3, 0xe2, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 4 + 5 + 3);
  // shl by an immediate 32 on a byte register is a shift by 0 (the count is masked): the flags
  // stay unknown. cmp rax, 0; shl cl, 32; js +0
  c = RunBoth(LoadUnknown({0x48, 0x83, 0xf8, 0x00, 0xc0, 0xe1, 0x20, 0x78, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 4 + 3);
  // imul leaves SF, ZF, AF and PF undefined, and this CPU may keep the old ones there: after a
  // compare of an unknown value, SF stays unknown. cmp rax, 0; mov ecx, 3; imul ecx, ecx; js +0
  c = RunBoth(
      LoadUnknown({0x48, 0x83, 0xf8, 0x00, 0xb9, 3, 0, 0, 0, 0x0f, 0xaf, 0xc9, 0x78, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 4 + 5 + 3);
  // blsi sets CF when its source is not zero (Zydis's table says it clears CF): after blsi of
  // an unknown value, jc is steered by it. mov rax, [rsi]; blsi rcx, rax; jc +0
  c = RunBoth(LoadUnknown({0xc4, 0xe2, 0xf0, 0xf3, 0xd8, 0x72, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 3 + 5);
  // inc leaves CF as it was (known): jc runs on after inc of an unknown value.
  c = RunBoth(LoadUnknown({0x48, 0xff, 0xc0, 0x72, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
}

TEST(UnknownBytes, AnUnknownReturnAddressEndsTheWindowAtTheReturn) {
  // mov rax, [rsi]; push rax; ret
  Case c = RunBoth(LoadUnknown({0x50, 0xc3}));
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(c.w.end_address, kCode + 4);
  // The push moved rsp by 8 whatever it pushed: a known slot below is still reachable.
  // mov rax, [rsi]; push rax; mov rcx, [rsp+8]; test rcx, rcx; jz +0
  c = RunBoth(LoadUnknown({0x50, 0x48, 0x8b, 0x4c, 0x24, 0x08, 0x48, 0x85, 0xc9, 0x74, 0x00}));
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete) << EmulationEndName(c.w.end);
}

TEST(UnknownBytes, DivisionByAnUnknownValueEndsBeforeItCouldFault) {
  // mov rcx, [rsi]; xor edx, edx; mov eax, 1; div rcx
  const Case c = RunBoth({0x48, 0x8b, 0x0e, 0x31, 0xd2, 0xb8, 1, 0, 0, 0, 0x48, 0xf7, 0xf1});
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(c.w.end_address, kCode + 10);
}

TEST(UnknownBytes, VectorStateTheGuestCannotLoadIsUnknownNotTheEnd) {
  // movq rax, xmm0; test rax, rax; jz +0: xmm0 was never loaded.
  Case c = RunBoth({0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x48, 0x85, 0xc0, 0x74, 0x00}, false);
  EXPECT_EQ(c.w.end, EmulationEnd::kVectorStateUnknown) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 8);
  // pxor xmm0, xmm0 first: known.
  c = RunBoth({0x66, 0x0f, 0xef, 0xc0, 0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x48, 0x85, 0xc0, 0x74, 0x00},
              false);
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete) << EmulationEndName(c.w.end);
  // movss xmm0, xmm1 keeps xmm0's bits 32-127 (Zydis says written, not read): movq of xmm0
  // still depends on the unloaded state.
  c = RunBoth({0x66, 0x0f, 0xef, 0xc9, 0xf3, 0x0f, 0x10, 0xc1, 0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x48,
               0x85, 0xc0, 0x74, 0x00},
              false);
  EXPECT_EQ(c.w.end, EmulationEnd::kVectorStateUnknown) << EmulationEndName(c.w.end);
  // fnstcw stores the x87 control word, part of the state not loaded: the stored bytes are
  // unknown. fnstcw [rdi]; movzx eax, word [rdi]; test eax, eax; jz +0
  c = RunBoth({0xd9, 0x3f, 0x0f, 0xb7, 0x07, 0x85, 0xc0, 0x74, 0x00}, false);
  EXPECT_EQ(c.w.end, EmulationEnd::kVectorStateUnknown) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 7);
  // With the vector state held, the first case runs on.
  c = RunBoth({0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x48, 0x85, 0xc0, 0x74, 0x00}, true);
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
}

TEST(UnknownBytes, ARegisterTheGuestDoesNotHoldIsUnknown) {
  // test rax, rax; jz +0 with rax unheld (a thread sampled in a system call).
  Case c = RunBoth({0x48, 0x85, 0xc0, 0x74, 0x00}, true, 1u << kRax);
  EXPECT_EQ(c.w.end, EmulationEnd::kRegisterUnknown);
  EXPECT_EQ(c.w.end_address, kCode + 3);
  // mov eax, 7 first: known.
  c = RunBoth({0xb8, 7, 0, 0, 0, 0x48, 0x85, 0xc0, 0x74, 0x00}, true, 1u << kRax);
  EXPECT_EQ(c.w.end, EmulationEnd::kComplete);
}

TEST(UnknownBytes, StringCopiesCarryUnknownBytes) {
  // Copy 8 unknown bytes to held memory with rep movsb, then branch on them:
  // mov ecx, 8; (rsi, rdi set) rep movsb; mov rax, [rdi-8]; test rax, rax; jz +0
  const Case c =
      RunBoth({0xb9, 8, 0, 0, 0, 0xf3, 0xa4, 0x48, 0x8b, 0x47, 0xf8, 0x48, 0x85, 0xc0, 0x74, 0x00});
  EXPECT_EQ(c.w.end, EmulationEnd::kNotInSnapshot) << EmulationEndName(c.w.end);
  EXPECT_EQ(c.w.end_address, kCode + 14);
  // A rep count that is unknown ends the window at the string instruction.
  const Case d = RunBoth({0x48, 0x8b, 0x0e, 0xf3, 0xa4});
  EXPECT_EQ(d.w.end, EmulationEnd::kNotInSnapshot);
  EXPECT_EQ(d.w.end_address, kCode + 3);
}

// A guest that does not know what the held page permitted at the start (its view of the
// mappings is older than its bytes): loads from it run on, a store into it ends the window
// there, before the store, with its own reason; a store to the stack, whose permission it
// knows, does not. Nor does it know whether the page it holds no byte of could be read: a
// load from there ends the window too, though its value would steer nothing.
class StaleMapsGuest : public PartialGuest {
 public:
  using PartialGuest::PartialGuest;
  bool WritableKnown(uint64_t page) override { return page != kHeld; }
  bool ReadableKnown(uint64_t page) override { return page != kUnheld; }
};

TEST(UnknownBytes, AStoreWhereThePermissionIsUnknownEndsTheWindowThere) {
  const CpuState start = Start();
  const EmulatorLimits limits = Limits();
  // mov rax, [rdi]; test rax, rax; jz +0 (taken: zeros); push rax; mov [rdi], rax
  const std::vector<uint8_t> code =
      WithLoop({0x48, 0x8b, 0x07, 0x48, 0x85, 0xc0, 0x74, 0x00, 0x50, 0x48, 0x89, 0x07});
  StaleMapsGuest guest(code, 0, true, 0);
  WindowEmulator emulator(limits);
  const EmulatedWindow w = emulator.Run(start, guest);
  EXPECT_EQ(w.end, EmulationEnd::kProtectionUnknown) << EmulationEndName(w.end);
  EXPECT_EQ(w.end_address, kCode + 9);  // the store into the held page, not the push
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_TRUE(w.events[0].taken);
  EXPECT_EQ(EmulationEndName(w.end), "protection_unknown");

  // jmp +0 (taken); mov rax, [rsi] (the page held nowhere); add rax, 1
  StaleMapsGuest loads(WithLoop({0xeb, 0x00, 0x48, 0x8b, 0x06, 0x48, 0x83, 0xc0, 0x01}), 0, true,
                       0);
  WindowEmulator fresh(limits);  // not `emulator`: it keeps the first code page (stable)
  const EmulatedWindow l = fresh.Run(start, loads);
  EXPECT_EQ(l.end, EmulationEnd::kProtectionUnknown) << EmulationEndName(l.end);
  EXPECT_EQ(l.end_address, kCode + 2);
  EXPECT_EQ(l.events.size(), 1u);
}

// A guest that holds everything is not tracked: a load from any page is a plain load.
class WholeGuest : public PartialGuest {
 public:
  using PartialGuest::PartialGuest;
  bool Partial() override { return false; }
};

TEST(UnknownBytes, AGuestThatHoldsEverythingIsNotTracked) {
  const CpuState start = Start();
  const EmulatorLimits limits = Limits();
  // mov rax, [rsi]; test rax, rax; jz +0 over 0xff bytes: the jz falls through, known.
  WholeGuest guest(WithLoop(LoadUnknown({0x48, 0x85, 0xc0, 0x74, 0x00})), 0xff, true, 0);
  WindowEmulator emulator(limits);
  const EmulatedWindow w = emulator.Run(start, guest);
  EXPECT_EQ(w.end, EmulationEnd::kComplete);
  ASSERT_FALSE(w.events.empty());
  EXPECT_FALSE(w.events[0].taken);
}

}  // namespace
}  // namespace pathprof::emulator
