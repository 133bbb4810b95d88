/* Code the CPU runs but no one may read: a counted loop copied into a page mapped PROT_EXEC
 * alone (/proc/PID/maps shows "--xp"). Without protection keys an x86 CPU still fetches it, but
 * the kernel gives no read access to it except through /proc/PID/mem's FOLL_FORCE, so an
 * emulated window that meets it must end "unreadable" instead of reading it.
 * The main thread calls the copied loop over and over and checks every result against the same
 * loop in C. Usage: example_execonly [--seconds S]   (default 2)
 * Prints "code 0xADDR" (the page) once ready, and "rounds N bad B" at exit (exit 0 iff B = 0). */
#include "code_pages.h"

/* uint64_t mix(uint64_t n): i & 3 ? a = rol(a ^ i, 1) : a += i, for i < n. */
CODE_TEMPLATE(mix,
              "  xor %eax, %eax\n"
              "  xor %ecx, %ecx\n"
              "1:\n"
              "  mov %ecx, %edx\n"
              "  and $3, %edx\n"
              "  jnz 2f\n"
              "  add %rcx, %rax\n"
              "  jmp 3f\n"
              "2:\n"
              "  xor %rcx, %rax\n"
              "  rol $1, %rax\n"
              "3:\n"
              "  inc %rcx\n"
              "  cmp %rdi, %rcx\n"
              "  jb 1b\n"
              "  ret\n");

static uint64_t MixInC(uint64_t n) {
  uint64_t a = 0;
  for (uint64_t i = 0; i < n; ++i) a = (i & 3) ? ((a ^ i) << 1 | (a ^ i) >> 63) : a + i;
  return a;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  setvbuf(stdout, NULL, _IOLBF, 0);
  unsigned char* code = MapCodePage();
  memcpy(code, mix_start, CODE_SIZE(mix));
  Protect(code, CODE_PAGE_SIZE, PROT_EXEC);
  uint64_t (*mix)(uint64_t) = (uint64_t(*)(uint64_t))(void*)code;
  const uint64_t n = 200000, want = MixInC(n);
  printf("code %p\n", (void*)code);
  unsigned long rounds = 0, bad = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds)
    if (mix(n) != want) ++bad;
  printf("rounds %lu bad %lu\n", rounds, bad);
  return bad == 0 ? 0 : 1;
}
