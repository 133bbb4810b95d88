/* A target whose memory must come out of tracing exactly as it went in. It fills a large heap
 * buffer (64 MiB by default) and a 64 KiB array on its stack with a pattern, then runs rounds
 * that only read the buffer (strided loads with data-dependent branches, glibc's memchr and
 * memcmp) and that flip words of the stack array and flip them back (so an emulated window's
 * stores, kept in its private overlay, would show if they ever reached the process). Every
 * round's result is checked against the one computed before any tracer could be attached, and
 * every 100 rounds the buffer's and the array's checksums against their first.
 * Usage: example_untouched [--seconds S] [--megabytes M]   (default 2 s, 64 MiB)
 * Prints "buffer 0xADDR BYTES" once ready, "rounds N bad B changed C" at exit (exit 0 iff both
 * are 0). */
#include "code_pages.h"

enum { kStackWords = 8192, kSeeds = 16 };

static uint64_t Checksum(const uint64_t* p, size_t words) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < words; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* One round over the buffer `ro` (read only) and the stack array `flipped` (each word it
 * touches is flipped and flipped back). */
__attribute__((noinline)) static uint64_t Round(const uint64_t* ro, size_t words,
                                                volatile uint64_t* flipped, unsigned seed) {
  uint64_t acc = seed;
  for (size_t j = 0; j < 20000; ++j) {
    const uint64_t v = ro[(j * 7919 + seed * 104729) % words];
    volatile uint64_t* w = &flipped[v % kStackWords];
    *w ^= v;
    acc += (v & 1) ? *w : *w >> 3;
    *w ^= v;
  }
  const unsigned char* bytes = (const unsigned char*)ro;
  const size_t offset = (size_t)seed * 65536;
  const unsigned char* hit = memchr(bytes + offset, (int)(seed * 31 % 256), 1 << 16);
  acc += hit ? (uint64_t)(hit - bytes) : 1;
  acc += (uint64_t)(memcmp(bytes + offset, bytes + offset + 4096, 1 << 14) > 0);
  return acc;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  size_t megabytes = 64;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--megabytes")) megabytes = (size_t)atol(argv[i + 1]);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const size_t words = megabytes * 1024 * 1024 / 8;
  uint64_t* buffer = malloc(words * 8);
  if (buffer == NULL || words * 8 < (kSeeds + 1) * 65536) return 2;
  for (size_t i = 0; i < words; ++i) buffer[i] = (i + 1) * 0x9e3779b97f4a7c15ull;
  uint64_t stack_array[kStackWords];
  for (size_t i = 0; i < kStackWords; ++i) stack_array[i] = ~i * 0xc2b2ae3d27d4eb4full;
  const uint64_t buffer_sum = Checksum(buffer, words);
  const uint64_t stack_sum = Checksum(stack_array, kStackWords);
  uint64_t want[kSeeds];
  for (unsigned s = 0; s < kSeeds; ++s) want[s] = Round(buffer, words, stack_array, s);

  printf("buffer %p %zu\n", (void*)buffer, words * 8);
  unsigned long rounds = 0, bad = 0, changed = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds) {
    if (Round(buffer, words, stack_array, rounds % kSeeds) != want[rounds % kSeeds]) ++bad;
    if (rounds % 100 == 99 &&
        (Checksum(buffer, words) != buffer_sum || Checksum(stack_array, kStackWords) != stack_sum))
      ++changed;
  }
  if (Checksum(buffer, words) != buffer_sum || Checksum(stack_array, kStackWords) != stack_sum)
    ++changed;
  printf("rounds %lu bad %lu changed %lu\n", rounds, bad, changed);
  return bad == 0 && changed == 0 ? 0 : 1;
}
