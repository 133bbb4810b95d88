// A recursion DEPTH frames deep (default 120), each frame holding a 256-byte buffer, that spins
// at the bottom: about 35 KiB of stack under the spinning function, and built without frame
// pointers, as Debian builds. A DWARF walk of a 16 KiB stack copy (the default) stops before
// main; a 64 KiB copy (--call-graph dwarf,65536) reaches it.
// Usage: deep_stack [SECONDS [DEPTH]] (SECONDS 0: forever).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noipa)) static unsigned long spin(unsigned long n) {
  unsigned long x = n;
  for (unsigned long i = 0; i < n; ++i) x = x * 6364136223846793005ul + i;
  return x;
}

// The buffer is written before the call and read after it, so the frame keeps it and the call
// is not a tail call.
__attribute__((noipa)) static unsigned long descend(int depth, unsigned long n) {
  volatile unsigned char pad[256];
  for (int i = 0; i < 256; i += 64) pad[i] = (unsigned char)(depth + i);
  const unsigned long below = depth == 0 ? spin(n) : descend(depth - 1, n);
  return below + pad[depth & 192];
}

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 2;
  const int depth = argc > 2 ? atoi(argv[2]) : 120;
  const double end = Now() + seconds;
  while (seconds == 0 || Now() < end) sink += descend(depth, 2000000);  // ~5 ms a descent
  printf("%lu\n", sink);
  return 0;
}
