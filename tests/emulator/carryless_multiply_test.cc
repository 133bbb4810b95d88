// pclmulqdq and vpclmulqdq (128, 256 and 512 bits) against the CPU: every quadword selector of
// the imm8 (and imm8 bits the instruction ignores), register and memory sources, random
// inputs; the whole of zmm0 must come out the same (the legacy form keeps the bits above 128,
// VEX and EVEX zero them). A legacy memory source that is not 16-byte aligned faults on the CPU
// and must end the window.
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

// pathprof_run_clmul(zmm, code, memory): zmm0-2 from zmm[0..191], rdi = memory, calls the
// case, zmm0 back to zmm[0..63].
extern "C" void pathprof_run_clmul(uint8_t* zmm, const void* code, const void* memory);

asm(R"(
  .pushsection .text
  .intel_syntax noprefix
  .globl pathprof_run_clmul
  .type pathprof_run_clmul, @function
pathprof_run_clmul:
  vmovdqu64 zmm0, [rdi]
  vmovdqu64 zmm1, [rdi + 64]
  vmovdqu64 zmm2, [rdi + 128]
  mov r11, rdi
  mov rdi, rdx
  sub rsp, 8
  call rsi
  add rsp, 8
  vmovdqu64 [r11], zmm0
  vzeroupper
  ret

  .macro CLMUL_CASES imm
  .globl pp_pclmul_\imm
pp_pclmul_\imm:
  pclmulqdq xmm0, xmm1, \imm
  ret
  .globl pp_pclmul_mem_\imm
pp_pclmul_mem_\imm:
  pclmulqdq xmm0, xmmword ptr [rdi], \imm
  ret
  .globl pp_vpclmul128_\imm
pp_vpclmul128_\imm:
  vpclmulqdq xmm0, xmm1, xmm2, \imm
  ret
  .globl pp_vpclmul256_\imm
pp_vpclmul256_\imm:
  vpclmulqdq ymm0, ymm1, ymmword ptr [rdi], \imm
  ret
  .globl pp_vpclmul512_\imm
pp_vpclmul512_\imm:
  vpclmulqdq zmm0, zmm1, zmm2, \imm
  ret
  .endm
  CLMUL_CASES 0x00
  CLMUL_CASES 0x01
  CLMUL_CASES 0x10
  CLMUL_CASES 0x11
  CLMUL_CASES 0xee
  CLMUL_CASES 0x5b
  .att_syntax prefix
  .popsection
)");

#define CLMUL_DECLARE(imm)               \
  extern "C" void pp_pclmul_##imm();     \
  extern "C" void pp_pclmul_mem_##imm(); \
  extern "C" void pp_vpclmul128_##imm(); \
  extern "C" void pp_vpclmul256_##imm(); \
  extern "C" void pp_vpclmul512_##imm();
CLMUL_DECLARE(0x00)
CLMUL_DECLARE(0x01)
CLMUL_DECLARE(0x10)
CLMUL_DECLARE(0x11)
CLMUL_DECLARE(0xee)
CLMUL_DECLARE(0x5b)

struct Form {
  const char* name;
  void (*fn)();
  bool wide;  // needs VPCLMULQDQ (and AVX-512 for zmm)
};

std::vector<Form> Forms() {
  std::vector<Form> f;
#define CLMUL_FORMS(imm)                                            \
  f.push_back({"pclmulqdq " #imm, &pp_pclmul_##imm, false});        \
  f.push_back({"pclmulqdq m " #imm, &pp_pclmul_mem_##imm, false});  \
  f.push_back({"vpclmulqdq x " #imm, &pp_vpclmul128_##imm, false}); \
  f.push_back({"vpclmulqdq y " #imm, &pp_vpclmul256_##imm, true});  \
  f.push_back({"vpclmulqdq z " #imm, &pp_vpclmul512_##imm, true});
  CLMUL_FORMS(0x00)
  CLMUL_FORMS(0x01)
  CLMUL_FORMS(0x10)
  CLMUL_FORMS(0x11)
  CLMUL_FORMS(0xee)
  CLMUL_FORMS(0x5b)
#undef CLMUL_FORMS
  return f;
}

bool HasWideClmul() {
  return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f");
}

sigjmp_buf g_fault_jump;
void OnFault(int) {
  siglongjmp(g_fault_jump, 1);
}

struct EmulatedCall {
  std::vector<uint64_t> stack = std::vector<uint64_t>(512);
  EmulatedWindow Run(void (*fn)(), const uint8_t* zmm, const void* memory) {
    CpuState s;
    uint64_t top = reinterpret_cast<uint64_t>(stack.data() + stack.size() - 8) & ~15ull;
    top -= 8;
    std::memcpy(reinterpret_cast<void*>(top), &kReturnSentinel, 8);
    s.gpr[kRsp] = top;
    s.gpr[kRdi] = reinterpret_cast<uint64_t>(memory);
    s.rip = reinterpret_cast<uint64_t>(fn);
    for (int i = 0; i < 3; ++i) std::memcpy(s.zmm[i].data(), zmm + 64 * i, 64);
    s.vector_loaded = true;
    SelfGuest guest;
    WindowEmulator emulator;
    return emulator.Run(s, guest);
  }
};

TEST(CarrylessMultiply, EveryFormAndSelectorMatchesTheCpu) {
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "this CPU lacks pclmulqdq or AVX-512 (the harness loads zmm registers)";
  std::mt19937_64 rng(0xc1);
  alignas(64) uint8_t memory[64];
  EmulatedCall call;
  int runs = 0;
  for (const Form& form : Forms()) {
    if (form.wide && !HasWideClmul()) continue;
    for (int input = 0; input < 200; ++input) {
      alignas(64) uint8_t zmm[192];
      for (size_t i = 0; i < sizeof zmm; i += 8) {
        uint64_t v = rng();
        if (input % 5 == 0) v &= 0xff;  // sparse polynomials too
        std::memcpy(zmm + i, &v, 8);
      }
      for (size_t i = 0; i < sizeof memory; i += 8) {
        const uint64_t v = rng();
        std::memcpy(memory + i, &v, 8);
      }
      const EmulatedWindow w = call.Run(form.fn, zmm, memory);
      pathprof_run_clmul(zmm, reinterpret_cast<const void*>(form.fn), memory);
      ++runs;
      ASSERT_EQ(w.end_address, kReturnSentinel)
          << form.name << ": " << EmulationEndName(w.end) << " " << MnemonicName(w.mnemonic);
      ASSERT_EQ(std::memcmp(w.state.zmm[0].data(), zmm, 64), 0) << form.name << " input " << input;
    }
  }
  std::printf("[ clmul    ] %d runs compared with the CPU\n", runs);
}

TEST(CarrylessMultiply, AMisalignedLegacyMemorySourceFaultsAsOnTheCpu) {
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "this CPU lacks pclmulqdq or AVX-512 (the harness loads zmm registers)";
  alignas(64) uint8_t memory[64] = {};
  alignas(64) uint8_t zmm[192] = {};
  struct sigaction sa = {}, old = {};
  sa.sa_handler = OnFault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old);
  volatile bool faulted = false;
  if (sigsetjmp(g_fault_jump, 1) == 0)
    pathprof_run_clmul(zmm, reinterpret_cast<const void*>(&pp_pclmul_mem_0x00), memory + 8);
  else
    faulted = true;
  sigaction(SIGSEGV, &old, nullptr);
  ASSERT_TRUE(faulted) << "the CPU took a misaligned m128 source";
  EmulatedCall call;
  const EmulatedWindow w = call.Run(&pp_pclmul_mem_0x00, zmm, memory + 8);
  EXPECT_EQ(w.end, EmulationEnd::kFault) << EmulationEndName(w.end);
  EXPECT_EQ(w.instructions, 0u);
}

}  // namespace
}  // namespace pathprof::emulator
