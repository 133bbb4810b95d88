// The x87 control and status words against the CPU: fnstcw stores the control word the window
// started with, fldcw loads one as the CPU keeps it (reserved bits as this CPU reads them
// back), fnstsw stores the status word, and fwait with an unmasked exception pending ends the
// window where the CPU raises SIGFPE. Each case is assembled into this test and runs natively
// (the control word set first with fldcw) and in the emulator from the same state.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "pathprof/emulator/window_emulator.h"
#include "self_guest.h"

namespace pathprof::emulator {
namespace {

using testing::kReturnSentinel;
using testing::SelfGuest;

// x87 cases: rdi and rsi point to 16-bit words; the result comes back in rax.
asm(R"(
  .pushsection .text
  .intel_syntax noprefix
  .globl pp_x87_fnstcw
  .type pp_x87_fnstcw, @function
pp_x87_fnstcw:
  fnstcw word ptr [rdi]
  movzx eax, word ptr [rdi]
  ret
  .globl pp_x87_fldcw
  .type pp_x87_fldcw, @function
pp_x87_fldcw:
  fldcw word ptr [rsi]
  fnstcw word ptr [rdi]
  movzx eax, word ptr [rdi]
  ret
  .globl pp_x87_fstcw
  .type pp_x87_fstcw, @function
pp_x87_fstcw:
  fstcw word ptr [rdi]
  movzx eax, word ptr [rdi]
  ret
  .globl pp_x87_fnstsw_ax
  .type pp_x87_fnstsw_ax, @function
pp_x87_fnstsw_ax:
  mov eax, 0xffffffff
  fnstsw ax
  ret
  .globl pp_x87_fnstsw_mem
  .type pp_x87_fnstsw_mem, @function
pp_x87_fnstsw_mem:
  fnstsw word ptr [rdi]
  movzx eax, word ptr [rdi]
  ret
  .globl pp_x87_fwait
  .type pp_x87_fwait, @function
pp_x87_fwait:
  fwait
  mov eax, 1
  ret
  .att_syntax prefix
  .popsection
)");

extern "C" void pp_x87_fnstcw();
extern "C" void pp_x87_fldcw();
extern "C" void pp_x87_fstcw();
extern "C" void pp_x87_fnstsw_ax();
extern "C" void pp_x87_fnstsw_mem();
extern "C" void pp_x87_fwait();

uint16_t ControlWord() {
  uint16_t cw = 0;
  asm volatile("fnstcw %0" : "=m"(cw));
  return cw;
}
void SetControlWord(uint16_t cw) {
  asm volatile("fldcw %0" : : "m"(cw));
}
uint16_t StatusWord() {
  uint16_t sw = 0;
  asm volatile("fnstsw %0" : "=m"(sw));
  return sw;
}

// The control word as the CPU keeps it after fldcw `v` (what the thread's XSAVE area would
// hold).
uint16_t AsLoaded(uint16_t v) {
  const uint16_t saved = ControlWord();
  SetControlWord(v);
  const uint16_t loaded = ControlWord();
  SetControlWord(saved);
  return loaded;
}

// Runs a case natively with the x87 control word `cw`: rdi = store, rsi = load; rax back.
uint64_t RunNative(void (*fn)(), uint16_t cw, uint16_t* store, const uint16_t* load) {
  const uint16_t saved = ControlWord();
  SetControlWord(cw);
  uint64_t rax = 0;
  // Below the red zone: the call's return address must not land on this function's locals.
  asm volatile("sub $128, %%rsp\n\tcall *%[fn]\n\tadd $128, %%rsp"
               : "=a"(rax)
               : [fn] "r"(fn), "D"(store), "S"(load)
               : "memory", "cc", "rcx", "rdx", "r8", "r9", "r10", "r11");
  SetControlWord(saved);
  return rax;
}

struct Emulated {
  std::vector<uint64_t> stack = std::vector<uint64_t>(512);
  EmulatedWindow Run(void (*fn)(), uint16_t fcw, uint16_t fsw, uint16_t* store,
                     const uint16_t* load) {
    CpuState s;
    uint64_t top = reinterpret_cast<uint64_t>(stack.data() + stack.size() - 8) & ~15ull;
    top -= 8;
    std::memcpy(reinterpret_cast<void*>(top), &kReturnSentinel, 8);
    s.gpr[kRsp] = top;
    s.gpr[kRdi] = reinterpret_cast<uint64_t>(store);
    s.gpr[kRsi] = reinterpret_cast<uint64_t>(load);
    s.rip = reinterpret_cast<uint64_t>(fn);
    s.fcw = fcw;
    s.fsw = fsw;
    s.vector_loaded = true;  // the x87 words come with the vector state: given here
    SelfGuest guest;
    WindowEmulator emulator;
    return emulator.Run(s, guest);
  }
};

TEST(X87Control, StoresAndLoadsTheControlWordAsTheCpuDoes) {
  std::mt19937 rng(87);
  Emulated emulated;
  int runs = 0;
  for (int i = 0; i < 2000; ++i) {
    // Control words of every kind: the defaults, precision and rounding changes, unmasked
    // exceptions, reserved bits set.
    static const uint16_t kWords[] = {0x037f, 0x027f, 0x007f, 0x0f7f, 0x0b7f, 0x137f,
                                      0x0000, 0xffff, 0x1f3f, 0x0040, 0x037e, 0x1000};
    const uint16_t start = AsLoaded(i < 12 ? kWords[i] : static_cast<uint16_t>(rng()));
    const uint16_t load = i < 12 ? kWords[11 - i] : static_cast<uint16_t>(rng());
    for (void (*fn)() : {&pp_x87_fnstcw, &pp_x87_fldcw, &pp_x87_fstcw}) {
      uint16_t native_store = 0, emulated_store = 0;
      const uint64_t native = RunNative(fn, start, &native_store, &load);
      const EmulatedWindow w = emulated.Run(fn, start, 0, &emulated_store, &load);
      ++runs;
      ASSERT_EQ(w.end_address, kReturnSentinel)
          << EmulationEndName(w.end) << " " << MnemonicName(w.mnemonic);
      ASSERT_EQ(w.state.gpr[kRax], native)
          << std::hex << "start " << start << " load " << load << " case " << i;
      if (fn == &pp_x87_fldcw) {
        EXPECT_EQ(w.state.fcw, AsLoaded(load)) << std::hex << load;
      } else {
        EXPECT_EQ(w.state.fcw, start);
      }
    }
  }
  std::printf("[ x87      ] %d runs compared with the CPU\n", runs);
}

TEST(X87Control, StoresTheStatusWord) {
  // A status word with flags set: 1/0 with zero-divide masked sets ZE (the quotient is popped
  // again).
  uint16_t sw = 0;
  const float zero = 0;
  asm volatile("fnclex\n\tfld1\n\tfdivs %1\n\tfstp %%st(0)\n\tfnstsw %0" : "=m"(sw) : "m"(zero));
  asm volatile("fnclex");
  ASSERT_NE(sw & 0x4, 0) << "no zero-divide flag: " << sw;
  Emulated emulated;
  uint16_t store = 0;
  const uint16_t unused = 0;
  EmulatedWindow w = emulated.Run(&pp_x87_fnstsw_ax, 0x37f, sw, &store, &unused);
  ASSERT_EQ(w.end_address, kReturnSentinel) << EmulationEndName(w.end);
  EXPECT_EQ(w.state.gpr[kRax], 0xffff0000ull | sw) << "fnstsw ax writes ax only";
  w = emulated.Run(&pp_x87_fnstsw_mem, 0x37f, sw, &store, &unused);
  ASSERT_EQ(w.end_address, kReturnSentinel) << EmulationEndName(w.end);
  EXPECT_EQ(w.state.gpr[kRax], sw);
}

sigjmp_buf g_fpe_jump;
void OnFpe(int) {
  siglongjmp(g_fpe_jump, 1);
}

TEST(X87Control, FwaitWithAnUnmaskedExceptionPendingEndsTheWindowWhereTheCpuTraps) {
  // Natively: zero-divide unmasked, 1/0 leaves it pending, fwait raises SIGFPE.
  struct sigaction sa = {}, old = {};
  sa.sa_handler = OnFpe;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGFPE, &sa, &old);
  const uint16_t saved = ControlWord();
  uint16_t pending = 0;
  volatile bool trapped = false;
  const float zero = 0;
  if (sigsetjmp(g_fpe_jump, 1) == 0) {
    SetControlWord(0x37b);  // ZM clear
    asm volatile("fnclex\n\tfld1\n\tfdivs %1\n\tfnstsw %0" : "=m"(pending) : "m"(zero));
    asm volatile("fwait");
  } else {
    trapped = true;  // the handler ran with a fresh x87 state: nothing is left on the stack
  }
  asm volatile("fninit");  // an empty stack, no exception left pending
  SetControlWord(saved);
  sigaction(SIGFPE, &old, nullptr);
  ASSERT_TRUE(trapped) << "fwait did not trap natively";
  ASSERT_NE(pending & 0x80, 0) << "no error summary in the status word: " << pending;

  Emulated emulated;
  uint16_t store = 0;
  const uint16_t unused = 0;
  EmulatedWindow w = emulated.Run(&pp_x87_fwait, 0x37b, pending, &store, &unused);
  EXPECT_EQ(w.end, EmulationEnd::kFault) << EmulationEndName(w.end);
  EXPECT_EQ(w.instructions, 0u);
  EXPECT_EQ(w.end_address, reinterpret_cast<uint64_t>(&pp_x87_fwait));
  // Nothing pending: fwait retires.
  w = emulated.Run(&pp_x87_fwait, 0x37f, StatusWord() & ~0x80, &store, &unused);
  EXPECT_EQ(w.end_address, kReturnSentinel) << EmulationEndName(w.end);
  EXPECT_EQ(w.state.gpr[kRax], 1u);
}

}  // namespace
}  // namespace pathprof::emulator
