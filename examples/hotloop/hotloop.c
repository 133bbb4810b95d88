/* A CPU-bound program with one known hot loop, for sampled-versus-exact comparisons.
 * Each round calls hot() (the hot loop: 2000 iterations, two body paths taken 3:1) and warm()
 * (a smaller loop, 500 iterations, one body path). Deterministic: the same rounds retire the
 * same branches, so an exact trace of a few rounds gives the branch mix of a long run.
 * Usage: example_hotloop [ROUNDS]   (0 or no argument: run until killed) */
#include <stdlib.h>

volatile unsigned sink_a, sink_b;

__attribute__((noinline)) unsigned hot(unsigned n) {
  unsigned acc = 0;
  for (unsigned i = 0; i < n; ++i) {
    /* Two distinct volatile stores keep this a real branch (no cmov). */
    if (i & 3u) {
      acc += i * 7u;
      sink_a = acc;
    } else {
      acc ^= i;
      sink_b = acc;
    }
  }
  return acc;
}

__attribute__((noinline)) unsigned warm(unsigned n) {
  unsigned acc = 1;
  for (unsigned i = 0; i < n; ++i) {
    acc = acc * 33u + i;
    sink_b = acc;
  }
  return acc;
}

int main(int argc, char** argv) {
  unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
  unsigned total = 0;
  for (unsigned long r = 0; rounds == 0 || r < rounds; ++r) total += hot(2000) + warm(500);
  return total == 1u ? 1 : 0;
}
