// Integer instructions one at a time against the CPU: each case is one instruction (and a ret)
// assembled into this test; it runs natively from random registers and flags, and in the
// emulator from the same state, and every general register and arithmetic flag must come out
// the same, AF and the flags the SDM calls undefined included (the emulator runs those
// instructions on this CPU: host_integer.h). Division cases that raise #DE natively must end
// the window (kFault). And a window that ends at a store that faults (a read-only page) must
// leave the registers as the CPU has them at the fault: the instruction leaves no trace.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pathprof/emulator/window_emulator.h"
#include "self_guest.h"

namespace pathprof::emulator {
namespace {

using testing::kReturnSentinel;
using testing::SelfGuest;

// The registers a case reads and writes, in x86 encoding order (rsp, r14, r15 unused), and
// rflags.
struct Registers {
  std::array<uint64_t, 16> gpr{};
  uint64_t flags = 0;
};
static_assert(sizeof(Registers) == 136);

extern "C" void pathprof_run_native(Registers* registers, const void* code);

// pathprof_run_native loads rax-r13 (not rsp) and rflags from the block, calls the case, and
// stores them back. Each case is `instruction; ret`, and uses no register but those.
asm(R"(
  .pushsection .text
  .intel_syntax noprefix
  .globl pathprof_run_native
  .type pathprof_run_native, @function
pathprof_run_native:
  push rbx
  push rbp
  push r12
  push r13
  push r14
  push r15
  sub rsp, 8
  mov r15, rdi
  mov r14, rsi
  mov rax, [r15 + 0]
  mov rcx, [r15 + 8]
  mov rdx, [r15 + 16]
  mov rbx, [r15 + 24]
  mov rbp, [r15 + 40]
  mov rsi, [r15 + 48]
  mov rdi, [r15 + 56]
  mov r8, [r15 + 64]
  mov r9, [r15 + 72]
  mov r10, [r15 + 80]
  mov r11, [r15 + 88]
  mov r12, [r15 + 96]
  mov r13, [r15 + 104]
  push qword ptr [r15 + 128]
  popfq
  call r14
  pushfq
  pop qword ptr [r15 + 128]
  mov [r15 + 0], rax
  mov [r15 + 8], rcx
  mov [r15 + 16], rdx
  mov [r15 + 24], rbx
  mov [r15 + 40], rbp
  mov [r15 + 48], rsi
  mov [r15 + 56], rdi
  mov [r15 + 64], r8
  mov [r15 + 72], r9
  mov [r15 + 80], r10
  mov [r15 + 88], r11
  mov [r15 + 96], r12
  mov [r15 + 104], r13
  add rsp, 8
  pop r15
  pop r14
  pop r13
  pop r12
  pop rbp
  pop rbx
  ret

  .macro CASE name, insn:vararg
  .globl \name
  .type \name, @function
\name:
  \insn
  ret
  .endm
  .macro CASE2 name, first, second
  .globl \name
  .type \name, @function
\name:
  \first
  \second
  ret
  .endm

  CASE pp_shl8, shl al, cl
  CASE pp_shl16, shl ax, cl
  CASE pp_shl32, shl eax, cl
  CASE pp_shl64, shl rax, cl
  CASE pp_shl64_1, shl rax, 1
  CASE pp_shl32_imm, shl eax, 13
  CASE pp_shr8, shr al, cl
  CASE pp_shr16, shr ax, cl
  CASE pp_shr32, shr eax, cl
  CASE pp_shr64, shr rax, cl
  CASE pp_shr16_1, shr ax, 1
  CASE pp_sar8, sar al, cl
  CASE pp_sar16, sar ax, cl
  CASE pp_sar32, sar eax, cl
  CASE pp_sar64, sar rax, cl
  CASE pp_sar64_imm, sar rax, 63
  CASE pp_rol8, rol al, cl
  CASE pp_rol16, rol ax, cl
  CASE pp_rol32, rol eax, cl
  CASE pp_rol64, rol rax, cl
  CASE pp_ror8, ror al, cl
  CASE pp_ror16, ror ax, cl
  CASE pp_ror32, ror eax, cl
  CASE pp_ror64, ror rax, cl
  CASE pp_ror64_1, ror rax, 1
  # A register rotated by an imm8 over 1: an Intel Xeon leaves OF as it was, where the cl form
  # and the memory form set it (emulator/src/host_integer.h).
  CASE pp_rol16_imm, rol ax, 7
  CASE pp_rol32_imm, rol eax, 8
  CASE pp_ror64_imm, ror rax, 33
  CASE pp_ror8_imm, ror al, 38
  CASE pp_rol_mem64_imm, rol qword ptr [rdi], 26
  CASE pp_rcl8, rcl al, cl
  CASE pp_rcl16, rcl ax, cl
  CASE pp_rcl32, rcl eax, cl
  CASE pp_rcl64, rcl rax, cl
  CASE pp_rcr8, rcr al, cl
  CASE pp_rcr16, rcr ax, cl
  CASE pp_rcr32, rcr eax, cl
  CASE pp_rcr64, rcr rax, cl
  CASE pp_shl_mem32, shl dword ptr [rdi], cl
  CASE pp_shld16, shld ax, dx, cl
  CASE pp_shld32, shld eax, edx, cl
  CASE pp_shld64, shld rax, rdx, cl
  CASE pp_shld64_imm, shld rax, rdx, 17
  CASE pp_shrd16, shrd ax, dx, cl
  CASE pp_shrd32, shrd eax, edx, cl
  CASE pp_shrd64, shrd rax, rdx, cl
  CASE pp_shrd32_imm, shrd eax, edx, 31
  CASE pp_mul8, mul cl
  CASE pp_mul16, mul cx
  CASE pp_mul32, mul ecx
  CASE pp_mul64, mul rcx
  CASE pp_mul64_mem, mul qword ptr [rdi]
  CASE pp_imul8, imul cl
  CASE pp_imul16, imul cx
  CASE pp_imul32, imul ecx
  CASE pp_imul64, imul rcx
  CASE pp_imul16_2, imul ax, cx
  CASE pp_imul32_2, imul eax, ecx
  CASE pp_imul64_2, imul rax, rcx
  CASE pp_imul32_3, imul eax, ecx, -7
  CASE pp_imul64_3, imul rax, rcx, 0x12345
  CASE pp_imul64_mem, imul rax, qword ptr [rdi]
  CASE pp_div8, div cl
  CASE pp_div16, div cx
  CASE pp_div32, div ecx
  CASE pp_div64, div rcx
  CASE pp_idiv8, idiv cl
  CASE pp_idiv16, idiv cx
  CASE pp_idiv32, idiv ecx
  CASE pp_idiv64, idiv rcx
  CASE pp_div32_mem, div dword ptr [rdi]
  CASE pp_bt16, bt ax, cx
  CASE pp_bt32, bt eax, ecx
  CASE pp_bt64, bt rax, rcx
  CASE pp_bt64_imm, bt rax, 45
  CASE pp_bts32, bts eax, ecx
  CASE pp_bts64, bts rax, rcx
  CASE pp_btr16, btr ax, cx
  CASE pp_btr64, btr rax, rcx
  CASE pp_btc32, btc eax, ecx
  CASE pp_btc64, btc rax, rcx
  CASE pp_bt_mem64, bt qword ptr [rdi], rsi
  CASE pp_bts_mem32, bts dword ptr [rdi], esi
  CASE pp_btr_mem16, btr word ptr [rdi], si
  CASE pp_btc_mem64_imm, btc qword ptr [rdi], 50
  CASE pp_bsf16, bsf ax, cx
  CASE pp_bsf32, bsf eax, ecx
  CASE pp_bsf64, bsf rax, rcx
  CASE pp_bsr16, bsr ax, cx
  CASE pp_bsr32, bsr eax, ecx
  CASE pp_bsr64, bsr rax, rcx
  CASE pp_tzcnt16, tzcnt ax, cx
  CASE pp_tzcnt32, tzcnt eax, ecx
  CASE pp_tzcnt64, tzcnt rax, rcx
  CASE pp_lzcnt16, lzcnt ax, cx
  CASE pp_lzcnt32, lzcnt eax, ecx
  CASE pp_lzcnt64, lzcnt rax, rcx
  CASE pp_popcnt16, popcnt ax, cx
  CASE pp_popcnt32, popcnt eax, ecx
  CASE pp_popcnt64, popcnt rax, rcx
  CASE pp_andn32, andn eax, ecx, edx
  CASE pp_andn64, andn rax, rcx, rdx
  CASE pp_bzhi32, bzhi eax, ecx, edx
  CASE pp_bzhi64, bzhi rax, rcx, rdx
  CASE pp_bextr32, bextr eax, ecx, edx
  CASE pp_bextr64, bextr rax, rcx, rdx
  CASE pp_blsr32, blsr eax, ecx
  CASE pp_blsr64, blsr rax, rcx
  CASE pp_blsi32, blsi eax, ecx
  CASE pp_blsi64, blsi rax, rcx
  CASE pp_blsmsk32, blsmsk eax, ecx
  CASE pp_blsmsk64, blsmsk rax, rcx
  CASE pp_pdep32, pdep eax, ecx, edx
  CASE pp_pdep64, pdep rax, rcx, rdx
  CASE pp_pext32, pext eax, ecx, edx
  CASE pp_pext64, pext rax, rcx, rdx
  CASE pp_mulx32, mulx eax, ecx, ebx
  CASE pp_mulx64, mulx rax, rcx, rbx
  CASE pp_mulx_same, mulx rax, rax, rbx
  CASE pp_adcx32, adcx eax, ecx
  CASE pp_adcx64, adcx rax, rcx
  CASE pp_adox64, adox rax, rcx
  CASE pp_adox_mem64, adox rax, qword ptr [rdi]
  CASE pp_movbe_load16, movbe ax, word ptr [rdi]
  CASE pp_movbe_load32, movbe eax, dword ptr [rdi]
  CASE pp_movbe_load64, movbe rax, qword ptr [rdi]
  CASE2 pp_movbe_store16, "movbe word ptr [rdi], cx", "mov rdx, qword ptr [rdi]"
  CASE2 pp_movbe_store32, "movbe dword ptr [rdi], ecx", "mov rdx, qword ptr [rdi]"
  CASE2 pp_movbe_store64, "movbe qword ptr [rdi], rcx", "mov rdx, qword ptr [rdi]"
  CASE pp_add32, add eax, ecx
  CASE pp_adc64, adc rax, rcx
  CASE pp_sbb16, sbb ax, cx
  CASE pp_xor8, xor al, cl
  CASE pp_neg32, neg eax
  CASE pp_inc64, inc rax
  CASE pp_xadd32, xadd eax, ecx
  CASE pp_xadd_same, xadd eax, eax
  CASE2 pp_xadd_mem, "xadd dword ptr [rdi], ecx", "mov r8, qword ptr [rdi]"
  CASE2 pp_xchg_mem, "xchg qword ptr [rdi], rcx", "mov r8, qword ptr [rdi]"
  CASE pp_cmpxchg32, cmpxchg ecx, edx
  CASE2 pp_cmpxchg_mem, "lock cmpxchg qword ptr [rdi], rdx", "mov r8, qword ptr [rdi]"
  CASE2 pp_cmpxchg_mem_equal, "mov rax, qword ptr [rdi]", "cmpxchg qword ptr [rdi], rdx"
  CASE2 pp_pop_mem, "push rcx", "pop qword ptr [rdi]"

  CASE pp_fault_add_mem, add dword ptr [rdi], eax
  CASE pp_fault_inc_mem, inc qword ptr [rdi]
  CASE pp_fault_xadd_mem, xadd dword ptr [rdi], eax
  CASE pp_fault_xchg_mem, xchg qword ptr [rdi], rax
  CASE pp_fault_cmpxchg_mem, lock cmpxchg dword ptr [rdi], ecx
  CASE pp_fault_shl_mem, shl dword ptr [rdi], cl
  CASE pp_fault_neg_mem, neg qword ptr [rdi]
  CASE pp_fault_bts_mem, bts qword ptr [rdi], rcx
  CASE pp_fault_movbe_mem, movbe qword ptr [rdi], rcx
  CASE pp_fault_rep_movsb, rep movsb
  CASE pp_fault_rep_stosq, rep stosq
  .att_syntax prefix
  .popsection
)");

#define CASE_FN(name) extern "C" void name();
// clang-format off
#define EACH_CASE(X)                                                                          \
  X(pp_shl8) X(pp_shl16) X(pp_shl32) X(pp_shl64) X(pp_shl64_1) X(pp_shl32_imm) X(pp_shr8)     \
  X(pp_shr16) X(pp_shr32) X(pp_shr64) X(pp_shr16_1) X(pp_sar8) X(pp_sar16) X(pp_sar32)        \
  X(pp_sar64) X(pp_sar64_imm) X(pp_rol8) X(pp_rol16) X(pp_rol32) X(pp_rol64) X(pp_ror8)       \
  X(pp_ror16) X(pp_ror32) X(pp_ror64) X(pp_ror64_1) X(pp_rol16_imm) X(pp_rol32_imm) X(pp_ror64_imm) X(pp_ror8_imm) X(pp_rol_mem64_imm) X(pp_rcl8) X(pp_rcl16) X(pp_rcl32)        \
  X(pp_rcl64) X(pp_rcr8) X(pp_rcr16) X(pp_rcr32) X(pp_rcr64) X(pp_shl_mem32) X(pp_shld16)     \
  X(pp_shld32) X(pp_shld64) X(pp_shld64_imm) X(pp_shrd16) X(pp_shrd32) X(pp_shrd64)           \
  X(pp_shrd32_imm) X(pp_mul8) X(pp_mul16) X(pp_mul32) X(pp_mul64) X(pp_mul64_mem) X(pp_imul8) \
  X(pp_imul16) X(pp_imul32) X(pp_imul64) X(pp_imul16_2) X(pp_imul32_2) X(pp_imul64_2)         \
  X(pp_imul32_3) X(pp_imul64_3) X(pp_imul64_mem) X(pp_div8) X(pp_div16) X(pp_div32)           \
  X(pp_div64) X(pp_idiv8) X(pp_idiv16) X(pp_idiv32) X(pp_idiv64) X(pp_div32_mem) X(pp_bt16)   \
  X(pp_bt32) X(pp_bt64) X(pp_bt64_imm) X(pp_bts32) X(pp_bts64) X(pp_btr16) X(pp_btr64)        \
  X(pp_btc32) X(pp_btc64) X(pp_bt_mem64) X(pp_bts_mem32) X(pp_btr_mem16) X(pp_btc_mem64_imm)  \
  X(pp_bsf16) X(pp_bsf32) X(pp_bsf64) X(pp_bsr16) X(pp_bsr32) X(pp_bsr64) X(pp_tzcnt16)       \
  X(pp_tzcnt32) X(pp_tzcnt64) X(pp_lzcnt16) X(pp_lzcnt32) X(pp_lzcnt64) X(pp_popcnt16)        \
  X(pp_popcnt32) X(pp_popcnt64) X(pp_andn32) X(pp_andn64) X(pp_bzhi32) X(pp_bzhi64)           \
  X(pp_bextr32) X(pp_bextr64) X(pp_blsr32) X(pp_blsr64) X(pp_blsi32) X(pp_blsi64)             \
  X(pp_blsmsk32) X(pp_blsmsk64) X(pp_pdep32) X(pp_pdep64) X(pp_pext32) X(pp_pext64)         \
  X(pp_mulx32) X(pp_mulx64) X(pp_mulx_same) X(pp_adcx32) X(pp_adcx64) X(pp_adox64)           \
  X(pp_adox_mem64) X(pp_movbe_load16) X(pp_movbe_load32) X(pp_movbe_load64)      \
  X(pp_movbe_store16) X(pp_movbe_store32) X(pp_movbe_store64) X(pp_add32) X(pp_adc64)         \
  X(pp_sbb16) X(pp_xor8) X(pp_neg32) X(pp_inc64) X(pp_xadd32) X(pp_xadd_same) X(pp_xadd_mem)  \
  X(pp_xchg_mem) X(pp_cmpxchg32) X(pp_cmpxchg_mem) X(pp_cmpxchg_mem_equal) X(pp_pop_mem)
// clang-format on
EACH_CASE(CASE_FN)
extern "C" void pp_fault_add_mem();
extern "C" void pp_fault_inc_mem();
extern "C" void pp_fault_xadd_mem();
extern "C" void pp_fault_xchg_mem();
extern "C" void pp_fault_cmpxchg_mem();
extern "C" void pp_fault_shl_mem();
extern "C" void pp_fault_neg_mem();
extern "C" void pp_fault_bts_mem();
extern "C" void pp_fault_movbe_mem();
extern "C" void pp_fault_rep_movsb();
extern "C" void pp_fault_rep_stosq();

struct Case {
  const char* name;
  void (*fn)();
};

std::vector<Case> Cases() {
#define CASE_ENTRY(name) {#name, &name},
  return {EACH_CASE(CASE_ENTRY)};
#undef CASE_ENTRY
}

constexpr uint64_t kArithmeticFlagBits = 0x8d5;                       // CF PF AF ZF SF OF
constexpr int kUsed[] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13};  // not rsp, r14, r15
constexpr const char* kNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

// Values where the flags of these instructions turn: zero, one, all ones, the sign bits of
// each width, small counts, and random bits.
uint64_t Interesting(std::mt19937_64& rng) {
  static const uint64_t kValues[] = {0,
                                     1,
                                     2,
                                     3,
                                     7,
                                     0xff,
                                     0x80,
                                     0x7f,
                                     0x8000,
                                     0x7fff,
                                     0xffff,
                                     0x80000000,
                                     0x7fffffff,
                                     0xffffffff,
                                     0x8000000000000000,
                                     0x7fffffffffffffff,
                                     ~0ull,
                                     ~0ull - 1};
  switch (rng() % 4) {
    case 0:
      return kValues[rng() % std::size(kValues)];
    case 1:
      return rng() % 130;  // shift and rotate counts past every width
    case 2:
      return rng() >> (rng() % 64);
    default:
      return rng();
  }
}

// A stack of its own for the emulated call, with the sentinel return address on top.
struct EmulatedCall {
  std::vector<uint64_t> stack = std::vector<uint64_t>(512);
  CpuState State(const Registers& r, void (*fn)()) {
    CpuState s;
    for (int i : kUsed) s.gpr[i] = r.gpr[i];
    uint64_t top = reinterpret_cast<uint64_t>(stack.data() + stack.size() - 8) & ~15ull;
    top -= 8;
    std::memcpy(reinterpret_cast<void*>(top), &kReturnSentinel, 8);
    s.gpr[kRsp] = top;
    s.rip = reinterpret_cast<uint64_t>(fn);
    s.rflags = r.flags;
    return s;
  }
};

// Two pages of scratch memory for the memory forms, rdi in the middle: a bit offset of
// -2048..2047 from a register stays inside.
class Scratch {
 public:
  Scratch() {
    base_ = static_cast<uint8_t*>(
        mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Scratch() { munmap(base_, 8192); }
  uint8_t* middle() const { return base_ + 4096; }
  void Fill(std::mt19937_64& rng) {
    for (size_t i = 0; i < 8192; i += 8) {
      const uint64_t v = rng();
      std::memcpy(base_ + i, &v, 8);
    }
  }

 private:
  uint8_t* base_ = nullptr;
};

// Native runs that may fault: the signal handler takes the registers at the fault from the
// signal context and jumps back out.
sigjmp_buf g_fault_jump;
Registers g_fault_registers;
int g_fault_signal = 0;

void OnFault(int sig, siginfo_t*, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  const greg_t* g = uc->uc_mcontext.gregs;
  const int order[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                         REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
  for (int i = 0; i < 16; ++i) g_fault_registers.gpr[i] = static_cast<uint64_t>(g[order[i]]);
  g_fault_registers.flags = static_cast<uint64_t>(g[REG_EFL]);
  g_fault_signal = sig;
  siglongjmp(g_fault_jump, 1);
}

// Runs `fn` natively on `r`; returns the signal it faulted with (registers at the fault in
// g_fault_registers), or 0 (registers in `r`).
int RunNativeCatching(Registers* r, void (*fn)()) {
  struct sigaction sa = {}, old_segv = {}, old_fpe = {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGFPE, &sa, &old_fpe);
  g_fault_signal = 0;
  if (sigsetjmp(g_fault_jump, 1) == 0) pathprof_run_native(r, reinterpret_cast<const void*>(fn));
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGFPE, &old_fpe, nullptr);
  return g_fault_signal;
}

std::string Describe(const Registers& r) {
  char buf[64];
  std::string s;
  for (int i : kUsed) {
    std::snprintf(buf, sizeof buf, " %s=%#llx", kNames[i], (unsigned long long)r.gpr[i]);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " flags=%#llx", (unsigned long long)r.flags);
  return s + buf;
}

// The cases run natively: BMI1, BMI2, LZCNT, POPCNT, MOVBE and ADX must be there.
bool HasEveryExtension() {
  return __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("lzcnt") && __builtin_cpu_supports("popcnt") &&
         __builtin_cpu_supports("movbe") && __builtin_cpu_supports("adx");
}

TEST(IntegerInstructions, EveryCaseMatchesTheCpuOnRandomOperandsAndFlags) {
  if (!HasEveryExtension()) {
    GTEST_SKIP() << "this CPU lacks BMI1/BMI2/LZCNT/POPCNT/MOVBE/ADX";
  }
  std::mt19937_64 rng(20261126);
  Scratch scratch;
  SelfGuest guest;
  EmulatorLimits limits;
  limits.window_taken = 1000;
  WindowEmulator emulator(limits);
  EmulatedCall call;
  int runs = 0, faults = 0;
  for (const Case& c : Cases()) {
    int failures = 0;
    for (int input = 0; input < 400; ++input) {
      scratch.Fill(rng);
      Registers in;
      for (int i : kUsed) in.gpr[i] = Interesting(rng);
      in.gpr[kRdi] = reinterpret_cast<uint64_t>(scratch.middle());
      // Bit-string offsets of the memory bit tests stay within the scratch pages.
      in.gpr[kRsi] = static_cast<uint64_t>(static_cast<int64_t>(rng() % 4096) - 2048);
      in.flags = 0x202 | (rng() & kArithmeticFlagBits);
      const CpuState start = call.State(in, c.fn);
      // The emulator first: the native run may store to the scratch pages.
      const EmulatedWindow w = emulator.Run(start, guest);
      Registers native = in;
      const int sig = RunNativeCatching(&native, c.fn);
      ++runs;
      if (sig != 0) {
        // #DE: the window must end at the instruction, nothing retired, nothing changed.
        ++faults;
        EXPECT_EQ(sig, SIGFPE) << c.name;
        const bool ended = w.end == EmulationEnd::kFault && w.instructions == 0 &&
                           w.end_address == start.rip && w.state.gpr == start.gpr &&
                           w.state.rflags == start.rflags;
        if (!ended && ++failures <= 3)
          ADD_FAILURE() << c.name << ": the CPU raised signal " << sig << " on" << Describe(in)
                        << "; the emulator ended " << EmulationEndName(w.end) << " after "
                        << w.instructions << " instructions";
        continue;
      }
      bool same = w.end_address == kReturnSentinel;
      std::string diff;
      for (int i : kUsed) {
        if (w.state.gpr[i] == native.gpr[i]) continue;
        same = false;
        diff += std::string(" ") + kNames[i];
      }
      if ((w.state.rflags & kArithmeticFlagBits) != (native.flags & kArithmeticFlagBits)) {
        same = false;
        diff += " flags";
      }
      if (!same && ++failures <= 3)
        ADD_FAILURE() << c.name << " differs in" << diff << " (end " << EmulationEndName(w.end)
                      << " " << MnemonicName(w.mnemonic) << ")\n  in:    " << Describe(in)
                      << "\n  cpu:   " << Describe(native) << "\n  emu:  " << [&] {
                           Registers e;
                           for (int i : kUsed) e.gpr[i] = w.state.gpr[i];
                           e.flags = w.state.rflags;
                           return Describe(e);
                         }();
    }
  }
  std::printf("[ integer  ] %d runs compared with the CPU, %d of them #DE\n", runs, faults);
  EXPECT_GT(faults, 0) << "the divide cases never faulted: the #DE check went untested";
}

struct FaultCase {
  void (*fn)();
  const char* name;
  bool rep;
};

// Runs each case on a store to a read-only page: the CPU must fault (SIGSEGV), and the window
// must end before the instruction with the registers and flags the CPU has in the signal
// context of the fault (REP cases: see below).
void ExpectNoTrace(const std::vector<FaultCase>& cases) {
  uint8_t* pages = static_cast<uint8_t*>(
      mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  std::memset(pages, 0x5a, 8192);
  uint8_t* read_only = pages + 4096;
  ASSERT_EQ(mprotect(read_only, 4096, PROT_READ), 0);
  SelfGuest guest;
  WindowEmulator emulator;
  EmulatedCall call;
  for (const FaultCase& c : cases) {
    Registers in;
    in.gpr[kRax] = 0x1234;  // differs from the 0x5a5a5a5a in memory: cmpxchg fails
    in.gpr[kRcx] = c.rep ? 64 : 5;
    in.gpr[kRdx] = 0x77;
    in.gpr[kRsi] = reinterpret_cast<uint64_t>(pages);
    // The REP cases start 16 bytes before the read-only page: two stosq, sixteen movsb, then
    // the fault.
    in.gpr[kRdi] = reinterpret_cast<uint64_t>(c.rep ? read_only - 16 : read_only);
    in.flags = 0x202 | 0x1 | 0x40 | 0x10;  // CF, ZF, AF set: a flag change would show
    const CpuState start = call.State(in, c.fn);
    const EmulatedWindow w = emulator.Run(start, guest);
    Registers native = in;
    ASSERT_EQ(RunNativeCatching(&native, c.fn), SIGSEGV) << c.name << ": the CPU did not fault";
    EXPECT_EQ(w.end, EmulationEnd::kFault) << c.name << ": " << EmulationEndName(w.end);
    EXPECT_EQ(w.instructions, 0u) << c.name;
    EXPECT_EQ(w.end_address, start.rip) << c.name;
    const Registers& expected = c.rep ? in : g_fault_registers;
    if (c.rep) {
      // The CPU did advance: that is what the window must not show.
      EXPECT_NE(g_fault_registers.gpr[kRdi], in.gpr[kRdi]) << c.name;
    }
    for (int i : kUsed) EXPECT_EQ(w.state.gpr[i], expected.gpr[i]) << c.name << ": " << kNames[i];
    EXPECT_EQ(w.state.rflags & kArithmeticFlagBits, expected.flags & kArithmeticFlagBits)
        << c.name << ": flags";
  }
  munmap(pages, 8192);
}

// A store that faults ends the window before the instruction, with every register and flag as
// the CPU has them in the signal context of that fault (a read-modify-write, an exchange, a
// compare-exchange that fails: it writes the old value back, so it faults on a read-only page
// too). REP string instructions that fault part way are the exception: the window ends before
// the instruction (the stepped thread that verifies it stops there), so the registers are those
// before its first iteration, not the partly advanced ones of the CPU's fault.
TEST(IntegerInstructions, AFaultingStoreLeavesNoTrace) {
  if (!HasEveryExtension()) {
    GTEST_SKIP() << "this CPU lacks BMI1/BMI2/LZCNT/POPCNT/MOVBE/ADX";
  }
  ExpectNoTrace({
      {&pp_fault_xadd_mem, "xadd [ro], eax", false},
      {&pp_fault_xchg_mem, "xchg [ro], rax", false},
      {&pp_fault_cmpxchg_mem, "lock cmpxchg [ro], ecx (not equal)", false},
      {&pp_fault_shl_mem, "shl [ro], cl", false},
      {&pp_fault_neg_mem, "neg [ro]", false},
      {&pp_fault_bts_mem, "bts [ro], rcx", false},
      {&pp_fault_movbe_mem, "movbe [ro], rcx", false},
      {&pp_fault_rep_movsb, "rep movsb across into [ro]", true},
      {&pp_fault_rep_stosq, "rep stosq across into [ro]", true},
  });
}

// The same for the read-modify-writes the interpreter's fast path runs (fast_ops.h: add, sub,
// and, or, xor, inc, dec with a memory destination).
TEST(IntegerInstructions, AFaultingStoreOnTheFastPathLeavesNoTrace) {
  ExpectNoTrace({
      {&pp_fault_add_mem, "add [ro], eax", false},
      {&pp_fault_inc_mem, "inc [ro]", false},
  });
}

}  // namespace
}  // namespace pathprof::emulator
