/* Work a thread runs between its system calls or traps, long enough for windows to land in it,
 * that no compiler folds away: the hostile examples whose subject is something else (sleeping,
 * trapping) share it. */
#pragma once

#include <stdint.h>

__attribute__((noinline)) static uint64_t Spin(unsigned n) {
  uint64_t acc = 0;
  for (unsigned i = 0; i < n; ++i) acc = (i & 1) ? acc + i * 5u : acc ^ i;
  return acc;
}

/* Read on each call (no call is hoisted out of a loop) and written with each result. */
static volatile unsigned spin_n = 1000;
static volatile uint64_t sink;
