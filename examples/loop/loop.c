/* A counted loop: spin(n) runs its body exactly n times, so an exact trace must show its
 * back-edge taken n-1 times and not taken once. */
#include <stdlib.h>

volatile unsigned sink;

__attribute__((noinline)) unsigned spin(unsigned n) {
  unsigned acc = 0;
  for (unsigned i = 0; i < n; ++i) {
    acc += i * 7u;
    sink = acc;
  }
  return acc;
}

int main(int argc, char** argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000u;
  return spin(n) == 1u ? 1 : 0;
}
