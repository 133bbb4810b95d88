/* What the hostile example programs share: machine code assembled by GNU as into .rodata (never
 * run in place) and copied at run time into pages these programs map themselves, with the
 * protections each one is about; the run's deadline; its arguments.
 * x86-64 only, like the emulator they exercise. */
#ifndef PATHPROF_EXAMPLES_HOSTILE_CODE_PAGES_H
#define PATHPROF_EXAMPLES_HOSTILE_CODE_PAGES_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define CODE_PAGE_SIZE 4096u

/* Defines name_start/name_end around `body` (AT&T syntax, one instruction per line). Labels the
 * body declares with CODE_LABEL are found with CODE_OFFSET. Only position-independent code:
 * jumps inside the body and rip-relative references to its own labels. */
#define CODE_TEMPLATE(name, body)                                                    \
  __asm__(".pushsection .rodata.code_template." #name                                \
          ",\"a\"\n"                                                                 \
          ".globl " #name "_start\n.hidden " #name "_start\n" #name "_start:\n" body \
          ".globl " #name "_end\n.hidden " #name "_end\n" #name                      \
          "_end:\n"                                                                  \
          ".popsection\n");                                                          \
  extern const unsigned char name##_start[], name##_end[]
#define CODE_LABEL(label) ".globl " #label "\n.hidden " #label "\n" #label ":\n"
#define CODE_OFFSET(name, label) ((size_t)((label)-name##_start))
#define CODE_SIZE(name) ((size_t)(name##_end - name##_start))

/* A page of fresh anonymous memory (read-write) at a page boundary; exits on failure. */
static inline unsigned char* MapCodePage(void) {
  void* p = mmap(NULL, CODE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  return (unsigned char*)p;
}

static inline void Protect(void* page, size_t len, int prot) {
  if (mprotect(page, len, prot) != 0) {
    perror("mprotect");
    exit(2);
  }
}

/* Writes a 32-bit immediate that ends at `end` (the label after its instruction). */
static inline void PatchImm32(unsigned char* code, size_t end_offset, uint32_t value) {
  memcpy(code + end_offset - 4, &value, 4);
}

/* Set by SIGALRM once the run's time is up (StartDeadline). The programs' loops test this flag
 * instead of reading the clock: clock_gettime runs in the vDSO and reads the [vvar] page, which
 * no tracer can read, so every window that reached it would end "unreadable". */
static volatile sig_atomic_t deadline_passed;
static inline void OnDeadline(int sig) {
  (void)sig;
  deadline_passed = 1;
}
static inline void StartDeadline(double seconds) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnDeadline;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval t;
  memset(&t, 0, sizeof t);
  t.it_value.tv_sec = (time_t)seconds;
  t.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
  setitimer(ITIMER_REAL, &t, NULL);
}

/* "--seconds S" (default `fallback`), and whether a flag is present. */
static inline double SecondsArg(int argc, char** argv, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--seconds")) return atof(argv[i + 1]);
  return fallback;
}
static inline int HasFlag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], flag)) return 1;
  return 0;
}

#endif
