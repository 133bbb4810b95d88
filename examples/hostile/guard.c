/* Data right up to a PROT_NONE guard page, and pages whose protection flips while the program
 * runs: what an emulated window may read and write is what the CPU would let the thread read
 * and write at that moment, never what /proc/PID/mem (FOLL_FORCE) would give it.
 *
 * Every round scans a 16 KiB buffer whose last byte is the last byte before a PROT_NONE page:
 * glibc's strlen, memchr, memrchr and memcmp (their vector variants load whole aligned blocks
 * and must not cross into the guard), and a byte loop, starting at every offset of the last 100
 * bytes. The program never faults there; each result is checked against what it must be.
 *   --probe   each round also loads a byte of the guard page after a long straight run of
 *             multiplies, which faults (SIGSEGV, recovered with siglongjmp): the emulated window
 *             must end before that load, and the jmp after it (after_faulting_load) never
 *             retires.
 *   --toggle-load   each round loads from the guard page (a fault), then makes another page
 *             PROT_NONE, loads from it (a fault) and makes it readable again. Each load comes
 *             after a long straight run of multiplies.
 *   --toggle-store  the same with stores, and another page made read-only, then writable.
 *             The jmp after each faulting access (after_faulting_load, after_faulting_store)
 *             never retires: a window that shows one read or wrote a page through permissions
 *             it no longer had. (A tracer starts many windows right after it passed a signal
 *             on, in the handler: the first fault of each round makes those windows, and the
 *             reads of /proc/PID/maps they cause, come while the flipped page is accessible.)
 * Usage: example_guard [--seconds S] [--probe] [--toggle-load] [--toggle-store]   (default 2 s)
 * Prints "guard 0xADDR", "after_faulting_load 0xADDR", "after_faulting_store 0xADDR" once
 * ready, and "rounds N bad B faults F" at exit (exit 0 iff B = 0 and F is what was expected). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>

#include "code_pages.h"

/* Four rounds of a straight block of 4,000 multiplies: a window that starts anywhere in them
 * reaches what follows within five taken branches, and most of the thread's running time is
 * spent in them, so most windows do. */
#define MULTIPLY_BLOCKS                        \
  "  mov %rdi, %rax\n"                         \
  "  movabs $0x9e3779b97f4a7c15, %rsi\n"       \
  "  mov $4, %ecx\n"                           \
  "2:\n"                                       \
  "  .rept 4000\n  imul %rsi, %rax\n  .endr\n" \
  "  dec %ecx\n"                               \
  "  jnz 2b\n"

/* The blocks, then one access through p, then a jmp (at `label`) that retires only if the access
 * did not fault. */
/* clang-format off */
#define ACCESS_AFTER_BLOCKS(name, access, label)                        \
  ".text\n"                                                             \
  ".globl " #name "\n.type " #name ",@function\n" #name ":\n"            \
  MULTIPLY_BLOCKS                                                       \
  "  " access "\n"                                                      \
  ".globl " #label "\n" #label ":\n"                                     \
  "  jmp 1f\n"                                                          \
  "1:\n"                                                                \
  "  ret\n"                                                             \
  ".size " #name ", .-" #name "\n"

/* The first two used only where their access faults (the jmps at after_faulting_* never
 * retire), the third only where it does not. */
__asm__(ACCESS_AFTER_BLOCKS(LoadAfterBlocks, "movzbl (%rdi), %edx", after_faulting_load)
        ACCESS_AFTER_BLOCKS(StoreAfterBlocks, "movb %al, (%rdi)", after_faulting_store)
        ACCESS_AFTER_BLOCKS(LoadAfterBlocksOk, "movzbl (%rdi), %edx", after_load));
/* clang-format on */
void LoadAfterBlocks(volatile char* p);
void StoreAfterBlocks(volatile char* p);
void LoadAfterBlocksOk(volatile char* p);
extern const char after_faulting_load[], after_faulting_store[];

enum { kBufferSize = 16384, kTail = 100 };

static sigjmp_buf recover;
static void OnSegv(int sig) {
  (void)sig;
  siglongjmp(recover, 1);
}

/* Calls access(p); 1 when it faulted. */
static int Faults(void (*access)(volatile char*), volatile char* p) {
  if (sigsetjmp(recover, 1) != 0) return 1;
  access(p);
  return 0;
}

/* One scan of the buffer's tail; the number of wrong results. */
static unsigned long Scan(const char* buf, const char* copy) {
  const char* end = buf + kBufferSize; /* the guard page starts here */
  unsigned long bad = 0;
  for (size_t k = 1; k <= kTail; ++k) {
    const char* s = end - k;
    if (strlen(s) != k - 1) ++bad; /* the last byte is the only NUL */
    if (memchr(s, 0x7f, k) != NULL) ++bad;
    if (memrchr(s, 0x7f, k) != NULL) ++bad;
    if (memcmp(s, copy + kBufferSize - k, k) != 0) ++bad;
    unsigned sum = 0;
    for (const volatile char* q = end - 1; q >= s; --q) sum += (unsigned char)*q;
    unsigned want = 0;
    for (size_t i = kBufferSize - k; i < kBufferSize; ++i) want += (unsigned char)copy[i];
    if (sum != want) ++bad;
  }
  return bad;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  const int probe = HasFlag(argc, argv, "--probe");
  const int toggle_load = HasFlag(argc, argv, "--toggle-load");
  const int toggle_store = HasFlag(argc, argv, "--toggle-store");
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSegv;
  sigaction(SIGSEGV, &sa, NULL);

  /* The buffer fills the pages right below the guard page. */
  char* region = mmap(NULL, kBufferSize + CODE_PAGE_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 2;
  char* buf = region;
  char* guard = region + kBufferSize;
  Protect(guard, CODE_PAGE_SIZE, PROT_NONE);
  static char copy[kBufferSize];
  for (size_t i = 0; i < kBufferSize; ++i) buf[i] = copy[i] = (char)(1 + (i * 37) % 251);
  buf[kBufferSize - 1] = copy[kBufferSize - 1] = 0;
  /* The pages whose protection --toggle-load and --toggle-store flip. */
  volatile char* flip =
      mmap(NULL, 2 * CODE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (flip == MAP_FAILED) return 2;
  volatile char* written = flip + CODE_PAGE_SIZE;

  printf("guard %p\nafter_faulting_load %p\nafter_faulting_store %p\n", (void*)guard,
         (const void*)after_faulting_load, (const void*)after_faulting_store);
  unsigned long rounds = 0, bad = 0, faults = 0, want_faults = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds) {
    bad += Scan(buf, copy);
    if (probe) {
      /* Three times through the same blocks to a load that does not fault, then once to the
       * guard: a signal stop per round lets the tracer start few windows at the handler. */
      for (int i = 0; i < 3; ++i) LoadAfterBlocksOk(buf);
      faults += Faults(LoadAfterBlocks, guard);
      ++want_faults;
    }
    if (toggle_load) {
      faults += Faults(LoadAfterBlocks, guard);
      Protect((void*)flip, CODE_PAGE_SIZE, PROT_NONE);
      faults += Faults(LoadAfterBlocks, flip);
      Protect((void*)flip, CODE_PAGE_SIZE, PROT_READ);
      want_faults += 2;
    }
    if (toggle_store) {
      faults += Faults(StoreAfterBlocks, guard);
      Protect((void*)written, CODE_PAGE_SIZE, PROT_READ);
      faults += Faults(StoreAfterBlocks, written);
      Protect((void*)written, CODE_PAGE_SIZE, PROT_READ | PROT_WRITE);
      want_faults += 2;
    }
  }
  printf("rounds %lu bad %lu faults %lu\n", rounds, bad, faults);
  return bad == 0 && faults == want_faults ? 0 : 1;
}
