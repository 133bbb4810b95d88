/* A program that single-steps itself, as a debugger-detecting or self-tracing program does: it
 * sets the trap flag (pushf; or $0x100; popf) over a counted loop, and its SIGTRAP handler counts
 * one trap per instruction run with the flag set, then it clears the flag. The number of traps in
 * a round is fixed by the code (2 per loop turn and a few around it), the same every round and
 * every run: a tracer that takes these traps for its own, or loses one, changes it.
 * Between rounds a busy loop gives a tracer windows to take.
 * Usage: example_trap_flag [--rounds R] [--turns N] [--stdin]   (default 20 rounds of 100 turns;
 * with --stdin the rounds start once its standard input ends)
 * Prints "ready", then at exit "rounds R traps T min A max B other O trap_ns NS" (exit 0 iff
 * every round counted the same, A = B, and no other SIGTRAP came; NS: time in the flagged
 * loops, handler included). */
#define _GNU_SOURCE
#include <signal.h>
#include <time.h>

#include "busy_work.h"
#include "code_pages.h"

static volatile unsigned long traps, other;

static void OnTrap(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  if (info->si_code == TRAP_TRACE)
    traps = traps + 1;
  else
    other = other + 1;
}

/* `turns` turns of dec/jnz with the trap flag set. The red zone is stepped over first: pushf
 * writes below the stack pointer, where a leaf function may keep data. */
__attribute__((noinline)) static void FlaggedLoop(unsigned long turns) {
  __asm__ volatile(
      "lea -128(%%rsp), %%rsp\n"
      "pushfq\n"
      "orq $0x100, (%%rsp)\n"
      "popfq\n"
      "1: dec %0\n"
      "jnz 1b\n"
      "pushfq\n"
      "andq $~0x100, (%%rsp)\n"
      "popfq\n"
      "lea 128(%%rsp), %%rsp\n"
      : "+r"(turns)
      :
      : "cc", "memory");
}

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char** argv) {
  unsigned long rounds = 20, turns = 100;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!strcmp(argv[i], "--rounds")) rounds = strtoul(argv[i + 1], NULL, 10);
    if (!strcmp(argv[i], "--turns")) turns = strtoul(argv[i + 1], NULL, 10);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnTrap;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGTRAP, &sa, NULL);
  printf("ready\n");
  if (HasFlag(argc, argv, "--stdin")) {
    char c;
    while (read(0, &c, 1) > 0) {
    }
  }
  unsigned long min = (unsigned long)-1, max = 0;
  uint64_t trap_ns = 0;
  for (unsigned long r = 0; r < rounds; ++r) {
    for (int k = 0; k < 50000; ++k) sink = Spin(spin_n); /* tens of milliseconds: windows */
    const unsigned long before = traps;
    const uint64_t t0 = NowNs();
    FlaggedLoop(turns);
    trap_ns += NowNs() - t0;
    const unsigned long n = traps - before;
    if (n < min) min = n;
    if (n > max) max = n;
  }
  printf("rounds %lu traps %lu min %lu max %lu other %lu trap_ns %llu\n", rounds, traps, min, max,
         other, (unsigned long long)trap_ns);
  return min == max && other == 0 ? 0 : 1;
}
