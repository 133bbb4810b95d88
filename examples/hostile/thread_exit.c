/* Threads that come and go while they run code worth a window. N workers run at a time; each
 * runs a counted loop for its own lifetime (20 to 400 ms, longer than the tracer's 100 ms
 * between scans for new threads, so most are traced before they end), checks every result and
 * exits; the main thread starts a new one for each that ends. At the deadline main returns while
 * the workers are mid-loop: exit_group ends them wherever they are, stopped by a tracer or not.
 * Usage: example_thread_exit [--seconds S] [--workers N]   (default 2 s, 4 workers)
 * Prints "ready" once the first workers run, "threads T bad B" at exit (exit 0 iff B = 0). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "code_pages.h"

static atomic_ulong bad;
static sem_t ended;   /* posted by each worker as it ends */
static uint64_t want; /* Spin(kChunk) */
enum { kChunk = 1000 };

__attribute__((noinline)) static uint64_t Spin(unsigned n) {
  uint64_t acc = 0;
  for (unsigned i = 0; i < n; ++i) acc = (i & 1) ? acc + i * 5u : acc ^ i;
  return acc;
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void* Worker(void* arg) {
  const double lifetime = 0.02 + 0.38 * (double)((uintptr_t)arg % 97) / 96.0;
  const double end = Now() + lifetime;
  /* The clock is read every 100 chunks, so few windows meet the vDSO. */
  while (Now() < end)
    for (int k = 0; k < 100; ++k)
      if (Spin(kChunk) != want) atomic_fetch_add(&bad, 1);
  sem_post(&ended);
  return NULL;
}

static void StartWorker(unsigned long seed) {
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, Worker, (void*)(uintptr_t)(seed * 37)) != 0) exit(2);
  pthread_attr_destroy(&attr);
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  unsigned long workers = 4;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--workers")) workers = strtoul(argv[i + 1], NULL, 10);
  setvbuf(stdout, NULL, _IOLBF, 0);
  want = Spin(kChunk);
  sem_init(&ended, 0, 0);
  unsigned long threads = 0;
  for (; threads < workers; ++threads) StartWorker(threads);
  printf("ready\n");
  /* SIGALRM at the deadline interrupts the wait (EINTR). */
  for (StartDeadline(seconds); !deadline_passed;)
    if (sem_wait(&ended) == 0)
      StartWorker(threads++);
    else if (errno != EINTR)
      return 2;
  printf("threads %lu bad %lu\n", threads, atomic_load(&bad));
  return atomic_load(&bad) == 0 ? 0 : 1;
}
