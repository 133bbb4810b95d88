/* A JIT: code generated at run time and regenerated, with different code, at the same address
 * every millisecond or so; an emulated window must run the code that is there when it runs,
 * never a decode or a page copy of an earlier generation.
 * Each generation is one of eight variants of kernel(n) (two immediates patched in: which
 * iterations take the branch, and a constant), or with --layouts every other generation is
 * other(n), whose instructions start at other offsets. Every call's result is checked against
 * the same function in C.
 * How the code page is made:
 *   (default)         anonymous: mmap RW once; each generation mprotect RW, write, mprotect RX.
 *   --memfd           a memfd mapped twice, MAP_SHARED: the code runs from a read-execute view
 *                     that never changes, and is written through a read-write view (the
 *                     double-mapping JITs use where W^X forbids RWX pages).
 *   --memfd-private   the same, the read-execute view MAP_PRIVATE (it still sees the writes).
 *   --files           each generation is written into a new unlinked file, which then replaces
 *                     the last one at the same address (mmap MAP_FIXED, read-execute, private),
 *                     as a plugin reloaded in place would. The last 64 files are kept open, so
 *                     that a new file never gets the inode number of one just replaced: a
 *                     mapping of the same file at the same place, rewritten in between, looks
 *                     unchanged to any check of the mappings (README.md).
 * Usage: example_jit [--seconds S] [--layouts] [--memfd | --memfd-private | --files]
 *        (default 2 s)
 * Prints "code 0xADDR" once ready, "rounds N bad B" at exit (exit 0 iff B = 0). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>

#include "code_pages.h"

/* uint64_t kernel(uint64_t n): for i < n: (i & MASK) == 0 ? a += i : (a ^= i, a += ADDEND). */
CODE_TEMPLATE(kernel,
              "  xor %eax, %eax\n"
              "  xor %ecx, %ecx\n"
              "1:\n"
              "  mov %ecx, %edx\n"
              "  and $0x7fffffff, %edx\n" CODE_LABEL(kernel_mask_end)
              "  jnz 2f\n"
              "  add %rcx, %rax\n"
              "  jmp 3f\n"
              "2:\n"
              "  xor %rcx, %rax\n"
              "  add $0x7fffffff, %rax\n" CODE_LABEL(kernel_addend_end)
              "3:\n"
              "  inc %rcx\n"
              "  cmp %rdi, %rcx\n"
              "  jb 1b\n"
              "  ret\n");
extern const unsigned char kernel_mask_end[], kernel_addend_end[];

/* uint64_t other(uint64_t n), n > 0: for i = n..1: a = 2a + i, then rol 3 when i is odd. */
CODE_TEMPLATE(other,
              "  xor %eax, %eax\n"
              "  mov %rdi, %rcx\n"
              "  nop\n"
              "1:\n"
              "  lea (%rcx,%rax,2), %rax\n"
              "  test $1, %cl\n"
              "  jz 2f\n"
              "  rol $3, %rax\n"
              "2:\n"
              "  dec %rcx\n"
              "  jnz 1b\n"
              "  ret\n");

static uint64_t KernelInC(uint64_t n, uint32_t mask, int32_t addend) {
  uint64_t a = 0;
  for (uint64_t i = 0; i < n; ++i)
    a = ((uint32_t)i & mask) == 0 ? a + i : (a ^ i) + (uint64_t)(int64_t)addend;
  return a;
}

static uint64_t OtherInC(uint64_t n) {
  uint64_t a = 0;
  for (uint64_t i = n; i > 0; --i) {
    a = 2 * a + i;
    if (i & 1) a = a << 3 | a >> 61;
  }
  return a;
}

/* Writes generation `g` into `out` (the writable view of the code); returns what it computes. */
static uint64_t Generate(unsigned char* out, unsigned long g, int layouts, uint64_t n) {
  if (layouts && g % 2 == 1) {
    memcpy(out, other_start, CODE_SIZE(other));
    return OtherInC(n);
  }
  static const uint32_t kMasks[8] = {1, 2, 3, 4, 5, 6, 7, 12};
  const uint32_t mask = kMasks[(g / (layouts ? 2 : 1)) % 8];
  const int32_t addend = (int32_t)(g * 0x01234567u);
  memcpy(out, kernel_start, CODE_SIZE(kernel));
  PatchImm32(out, CODE_OFFSET(kernel, kernel_mask_end), mask);
  PatchImm32(out, CODE_OFFSET(kernel, kernel_addend_end), (uint32_t)addend);
  return KernelInC(n, mask, addend);
}

/* --files: `bytes` into a new unlinked file, mapped read-execute over the page at `at`. */
static int MapNewFile(unsigned char* at, const unsigned char* bytes) {
  static int open_files[64];
  static unsigned next;
  int* slot = &open_files[next++ % 64];
  if (next > 64) close(*slot); /* replaced 64 generations ago */
  *slot = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  return *slot >= 0 && pwrite(*slot, bytes, CODE_PAGE_SIZE, 0) == CODE_PAGE_SIZE &&
         mmap(at, CODE_PAGE_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, *slot, 0) == at;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  const int layouts = HasFlag(argc, argv, "--layouts");
  const int memfd_shared = HasFlag(argc, argv, "--memfd");
  const int memfd_private = HasFlag(argc, argv, "--memfd-private");
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int files = HasFlag(argc, argv, "--files");
  unsigned char *code, *writable;
  static unsigned char next_code[CODE_PAGE_SIZE]; /* --files: written to a file, then mapped */
  if (files) {
    code = mmap(NULL, CODE_PAGE_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 2;
    writable = next_code;
  } else if (memfd_shared || memfd_private) {
    const int fd = memfd_create("jit", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, CODE_PAGE_SIZE) != 0) return 2;
    writable = mmap(NULL, CODE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    code = mmap(NULL, CODE_PAGE_SIZE, PROT_READ | PROT_EXEC,
                memfd_private ? MAP_PRIVATE : MAP_SHARED, fd, 0);
    if (writable == MAP_FAILED || code == MAP_FAILED) return 2;
  } else {
    code = writable = MapCodePage();
  }
  uint64_t (*fn)(uint64_t) = (uint64_t(*)(uint64_t))(void*)code;
  const uint64_t n = 20000;
  printf("code %p\n", (void*)code);
  unsigned long rounds = 0, bad = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds) {
    if (writable == code) Protect(code, CODE_PAGE_SIZE, PROT_READ | PROT_WRITE);
    const uint64_t want = Generate(writable, rounds, layouts, n);
    if (writable == code) Protect(code, CODE_PAGE_SIZE, PROT_READ | PROT_EXEC);
    if (files && !MapNewFile(code, next_code)) return 2;
    for (int call = 0; call < 20; ++call)
      if (fn(n) != want) ++bad;
  }
  printf("rounds %lu bad %lu\n", rounds, bad);
  return bad == 0 ? 0 : 1;
}
