// One loop called from two callers that make its branch go opposite ways: caller_a's calls take
// the `if` 7 times in 8, caller_b's 1 time in 8. The callers alternate in phases (PHASE calls of
// one, then PHASE of the other), so a process-wide hot-path profile mixes the two while a
// per-context one (docs/profiles.md, "Hot paths per calling context") tells them apart.
// Usage: two_callers ROUNDS [ITERATIONS [PHASE]]; ROUNDS 0 runs forever. Deterministic.
#include <stdio.h>
#include <stdlib.h>

static volatile long sink_taken, sink_other, sink_calls;

// noipa: neither inlined nor cloned per constant `mode`, so both callers run the same code.
__attribute__((noipa)) long loop(long n, int mode) {
  long acc = 0;
  for (long i = 0; i < n; ++i) {
    // Stores on both arms keep the compiler from turning the branch into a conditional move.
    if (((i & 7) != 0) == (mode == 0)) {
      sink_taken = i;
      acc += i;
    } else {
      sink_other = i;
      acc ^= i;
    }
  }
  return acc;
}

// Work after the call keeps it from being a tail call: the caller's frame stays on the stack.
__attribute__((noipa)) long caller_a(long n) {
  const long r = loop(n, 0);
  sink_calls = sink_calls + 1;
  return r;
}

__attribute__((noipa)) long caller_b(long n) {
  const long r = loop(n, 1);
  sink_calls = sink_calls + 1;
  return r;
}

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? atol(argv[1]) : 1;
  const long n = argc > 2 ? atol(argv[2]) : 20000;
  const long phase = argc > 3 ? atol(argv[3]) : 1000;  // ~20 ms per phase at -O2 on this VM
  long total = 0;
  for (long r = 0; rounds == 0 || r < rounds; ++r) {
    for (long c = 0; c < phase; ++c) total += caller_a(n);
    for (long c = 0; c < phase; ++c) total += caller_b(n);
  }
  printf("%ld\n", total);
  return 0;
}
