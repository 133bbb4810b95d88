/* A conditional jump whose target lies inside the instruction it skips, as glibc's malloc and
 * free do (`je 1f; lock; 1: cmpxchg`: a process-wide flag picks the plain form for a single
 * thread and the locked one otherwise). Here the locked form runs every round: an int3 that a
 * tracer plants on the jump's target turns it into `lock int3`, an invalid instruction, and the
 * program dies of SIGILL (Debian's zstd did so in free() under int3 block stepping).
 * Usage: example_split_target_static [ROUNDS]   (default 1000); exits 0 when every round's
 * compare-and-swap succeeded. */
#include <stdint.h>
#include <stdlib.h>

volatile int threads_other_than_main = 1; /* 1: take the locked form, as a threaded glibc does */
uint64_t word;

int main(int argc, char** argv) {
  unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
  for (unsigned long i = 0; i < rounds; ++i) {
    uint64_t expected = word;
    const uint64_t desired = expected + 1;
    const int plain = threads_other_than_main == 0;
    __asm__ volatile(
        "testl %[plain], %[plain]\n\t"
        "jnz 1f\n\t"
        ".byte 0xf0\n" /* lock: skipped by the jump, which lands on the cmpxchg */
        "1: cmpxchgq %[desired], %[word]\n\t"
        : [word] "+m"(word), "+a"(expected)
        : [desired] "r"(desired), [plain] "r"(plain)
        : "cc", "memory");
  }
  return word == rounds ? 0 : 1;
}
