/* Self-modifying code in a page mapped read-write-execute.
 * selfmod(n) rewrites the immediate of one of its own instructions on every iteration (x = 5x+1
 * into "mov $x, %edx"), and branches on the value it reads back: an emulated window that runs
 * an instruction of a page it wrote must end "self_modifying" (the CPU would run the new bytes).
 * patched(n) starts from an immediate that the C code rewrites before every call: each window
 * must decode the bytes that are there now, never an earlier window's decode of that address.
 * Each result is checked against the same loop in C.
 * Usage: example_selfmod [--seconds S]   (default 2)
 * Prints "code 0xADDR" (the page) once ready, "rounds N bad B" at exit (exit 0 iff B = 0). */
#include "code_pages.h"

/* uint64_t selfmod(uint64_t n): x = 0 first, then n times: a += x if x & 8 else a -= x;
 * x = 5x + 1, stored into the immediate the next iteration loads. */
CODE_TEMPLATE(selfmod,
              "  xor %eax, %eax\n"
              "  lea selfmod_imm_end-4(%rip), %rsi\n"
              "  movl $0, (%rsi)\n"
              "1:\n"
              "  mov $0x7fffffff, %edx\n" CODE_LABEL(selfmod_imm_end)
              "  test $8, %dl\n"
              "  jz 2f\n"
              "  add %rdx, %rax\n"
              "  jmp 3f\n"
              "2:\n"
              "  sub %rdx, %rax\n"
              "3:\n"
              "  lea 1(%rdx,%rdx,4), %edx\n"
              "  mov %edx, (%rsi)\n"
              "  dec %rdi\n"
              "  jnz 1b\n"
              "  ret\n");
extern const unsigned char selfmod_imm_end[];

/* uint64_t patched(uint64_t n): the same loop from x = its immediate, without writing it. */
CODE_TEMPLATE(patched,
              "  xor %eax, %eax\n"
              "  mov $0x7fffffff, %edx\n" CODE_LABEL(patched_imm_end)
              "1:\n"
              "  test $8, %dl\n"
              "  jz 2f\n"
              "  add %rdx, %rax\n"
              "  jmp 3f\n"
              "2:\n"
              "  sub %rdx, %rax\n"
              "3:\n"
              "  lea 1(%rdx,%rdx,4), %edx\n"
              "  dec %rdi\n"
              "  jnz 1b\n"
              "  ret\n");
extern const unsigned char patched_imm_end[];

static uint64_t LoopInC(uint64_t n, uint32_t x) {
  uint64_t a = 0;
  for (; n > 0; --n, x = 5 * x + 1) a = (x & 8) ? a + x : a - x;
  return a;
}

enum { kPatchedOffset = 512 };

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  setvbuf(stdout, NULL, _IOLBF, 0);
  unsigned char* code = MapCodePage();
  Protect(code, CODE_PAGE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC);
  memcpy(code, selfmod_start, CODE_SIZE(selfmod));
  memcpy(code + kPatchedOffset, patched_start, CODE_SIZE(patched));
  uint64_t (*selfmod)(uint64_t) = (uint64_t(*)(uint64_t))(void*)code;
  uint64_t (*patched)(uint64_t) = (uint64_t(*)(uint64_t))(void*)(code + kPatchedOffset);
  const size_t patched_imm = kPatchedOffset + CODE_OFFSET(patched, patched_imm_end);
  /* selfmod() is slow (every store to the code it runs flushes the CPU's pipeline): patched()
   * runs ten times as many iterations, so that windows come from both. */
  const uint64_t n = 20000, n_patched = 10 * n, want_selfmod = LoopInC(n, 0);
  printf("code %p\n", (void*)code);
  unsigned long rounds = 0, bad = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds) {
    if (selfmod(n) != want_selfmod) ++bad;
    const uint32_t x = (uint32_t)rounds * 0x9e3779b9u;
    PatchImm32(code, patched_imm, x);
    if (patched(n_patched) != LoopInC(n_patched, x)) ++bad;
  }
  printf("rounds %lu bad %lu\n", rounds, bad);
  return bad == 0 ? 0 : 1;
}
