/* Two threads and one counter under a mutex: the writer increments it, the reader branches on
 * its low bit. An emulated window of the reader runs on a copy of memory taken when the reader
 * stopped, while the writer keeps running: from the lock on, what the window reads (the counter)
 * is what the writer left at that moment, not what the reader will read when it runs. Windows
 * must end where they would read what another thread may be writing (the lock-prefixed
 * cmpxchg that takes the mutex) rather than branch on a stale copy.
 * Usage: example_shared [--seconds S]   (default 2)
 * Prints "ready" once both threads run, "rounds N odd O" at exit (exit 0 unless a thread could
 * not start). */
#include <pthread.h>

#include "code_pages.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counter;
static volatile int stop_writer;

static void* Writer(void* arg) {
  (void)arg;
  while (!stop_writer) {
    pthread_mutex_lock(&mutex);
    ++counter;
    pthread_mutex_unlock(&mutex);
  }
  return NULL;
}

/* Reads the counter under the mutex and branches on it. */
__attribute__((noinline)) static int ReadIsOdd(void) {
  pthread_mutex_lock(&mutex);
  const uint64_t v = counter;
  pthread_mutex_unlock(&mutex);
  return (v & 1) != 0;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 2);
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_t writer;
  if (pthread_create(&writer, NULL, Writer, NULL) != 0) return 2;
  printf("ready\n");
  unsigned long rounds = 0, odd = 0;
  for (StartDeadline(seconds); !deadline_passed; ++rounds) odd += ReadIsOdd();
  stop_writer = 1;
  pthread_join(writer, NULL);
  printf("rounds %lu odd %lu\n", rounds, odd);
  return 0;
}
