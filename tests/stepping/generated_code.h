// Programs nobody wrote: x86-64 assembly drawn from a seed, for checking the emulator against
// the CPU on instruction sequences no compiler would emit (random operands, flags consumed right
// after the instruction that set them, data-dependent branches over a buffer). Every
// instruction is one whose result the architecture defines for the operands it gets: flags are
// consumed only after an instruction that defines them all (add, sub, cmp, test, and, or, xor,
// neg, adc, sbb), shifts and rotates take immediate counts, and the one division has a divisor
// forced odd and a dividend smaller than it (no #DE). With `vector`, SSE2 integer instructions
// too (movq both ways, paddd, psubq, pxor, pand, por, pcmpeqb, pcmpgtd, paddusb, pmuludq, pshufd,
// psrlq, pmovmskb), their results brought back to general registers and so to the branches.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace pathprof::stepping::testing {

class GeneratedProgram {
 public:
  // `blocks` blocks of straight-line code, each ending in a conditional branch over the next
  // few instructions, looped forever.
  // `vector`: SSE2 integer instructions too, their results moved back to general registers.
  static std::string Assembly(uint32_t seed, int blocks, bool vector = false) {
    GeneratedProgram g(seed);
    g.vector_ = vector;
    std::string s =
        ".bss\n.align 64\nbuf: .zero 4096\n.text\n.globl main\n.type main, @function\nmain:\n"
        "  push %rbx\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n";
    for (const char* r : kRegs) s += "  mov $" + std::to_string(g.Next()) + ", %" + r + "\n";
    s += "loop:\n";
    for (int b = 0; b < blocks; ++b) {
      const int n = 2 + static_cast<int>(g.Below(6));
      for (int i = 0; i < n; ++i) s += g.Instruction();
      s += g.FlagSetter();
      s += "  j" + std::string(kConditions[g.Below(kConditionCount)]) + " skip" +
           std::to_string(b) + "\n";
      for (int i = 0, k = 1 + static_cast<int>(g.Below(3)); i < k; ++i) s += g.Instruction();
      s += "skip" + std::to_string(b) + ":\n";
    }
    s += "  jmp loop\n.size main, .-main\n.section .note.GNU-stack,\"\",@progbits\n";
    return s;
  }

 private:
  // r13 is the buffer index (masked before each use); rsp and rbp are left alone.
  static constexpr const char* kRegs[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                                          "r8",  "r9",  "r10", "r11", "r12", "r14"};
  static constexpr int kRegCount = 12;
  static constexpr const char* kRegs32[] = {"eax", "ebx", "ecx",  "edx",  "esi",  "edi",
                                            "r8d", "r9d", "r10d", "r11d", "r12d", "r14d"};
  static constexpr const char* kRegs8[] = {"al",  "bl",  "cl",   "dl",   "sil",  "dil",
                                           "r8b", "r9b", "r10b", "r11b", "r12b", "r14b"};
  static constexpr const char* kConditions[] = {"o", "no", "b", "ae", "e", "ne", "be", "a",
                                                "s", "ns", "p", "np", "l", "ge", "le", "g"};
  static constexpr int kConditionCount = 16;

  explicit GeneratedProgram(uint32_t seed) : rng_(seed) {}

  uint64_t Next() { return rng_() & 0x7fffffff; }
  uint64_t Below(uint64_t n) { return rng_() % n; }
  std::string R() { return std::string("%") + kRegs[Below(kRegCount)]; }

  // An instruction that defines every arithmetic flag from two registers.
  std::string FlagSetter() {
    static constexpr const char* kOps[] = {"add", "sub", "cmp", "test", "and", "or", "xor"};
    return "  " + std::string(kOps[Below(7)]) + " " + R() + ", " + R() + "\n";
  }

  std::string Instruction() {
    const std::string a = R(), b = R();
    const int ra = static_cast<int>(Below(kRegCount));
    switch (Below(vector_ ? 26 : 20)) {
      case 0:
        return "  add " + a + ", " + b + "\n";
      case 1:
        return "  sub $" + std::to_string(Next() % 1000) + ", " + a + "\n";
      case 2:
        return "  xor " + a + ", " + b + "\n";
      case 3:
        return "  imul " + a + ", " + b + "\n";
      case 4:
        return "  lea " + std::to_string(Below(64)) + "(" + a + "," + b + ",4), " + R() + "\n";
      case 5: {
        static constexpr const char* kShifts[] = {"shl", "shr", "sar", "rol", "ror"};
        return "  " + std::string(kShifts[Below(5)]) + " $" + std::to_string(1 + Below(63)) + ", " +
               a + "\n";
      }
      case 6:
        return FlagSetter() + "  adc " + a + ", " + b + "\n";
      case 7:
        return FlagSetter() + "  sbb $" + std::to_string(Below(100)) + ", " + a + "\n";
      case 8:
        return FlagSetter() + "  cmov" + kConditions[Below(kConditionCount)] + " " + a + ", " + b +
               "\n";
      case 9:
        return FlagSetter() + "  set" + kConditions[Below(kConditionCount)] + " %" + kRegs8[ra] +
               "\n";
      case 10:
        return "  bswap " + a + "\n";
      case 11:
        return std::string("  movzbl %") + kRegs8[ra] + ", %" + kRegs32[Below(kRegCount)] + "\n";
      case 12:
        return std::string("  movslq %") + kRegs32[ra] + ", " + b + "\n";
      case 13:
        return "  neg " + a + "\n  not " + b + "\n";
      case 14:  // a load and a store at an index the value chose
        return "  mov " + a + ", %r13\n  and $0xff8, %r13\n  add buf(%r13), " + b + "\n  mov " +
               R() + ", buf(%r13)\n";
      case 15:
        return std::string("  add %") + kRegs32[ra] + ", %" + kRegs32[Below(kRegCount)] + "\n";
      case 16:
        return "  inc " + a + "\n  dec " + b + "\n";
      case 17:
        return "  xchg " + a + ", " + b + "\n";
      case 18:  // rdx:rax / (odd divisor above rdx): the quotient fits, the divisor is never 0
        return "  mov " + a + ", %r13\n  or $1, %r13\n  xor %edx, %edx\n  div %r13\n";
      default:
        return "  mul " + a + "\n";  // rdx:rax = rax * a
    }
  }

  std::mt19937 rng_;
  bool vector_ = false;
};

}  // namespace pathprof::stepping::testing
