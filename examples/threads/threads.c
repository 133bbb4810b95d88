/* Four threads, thread k (1..4) runs a counted loop of k*200 iterations, so an exact trace
 * must attribute to each thread's tid exactly one loop with that trip count. */
#include <pthread.h>
#include <stdint.h>

volatile unsigned sink;

__attribute__((noinline)) unsigned spin(unsigned n) {
  unsigned acc = 0;
  for (unsigned i = 0; i < n; ++i) {
    acc += i * 3u;
    sink = acc;
  }
  return acc;
}

static void* worker(void* arg) {
  unsigned k = (unsigned)(uintptr_t)arg;
  spin(k * 200u);
  return NULL;
}

int main(void) {
  pthread_t t[4];
  for (unsigned k = 1; k <= 4; ++k) pthread_create(&t[k - 1], NULL, worker, (void*)(uintptr_t)k);
  for (unsigned k = 0; k < 4; ++k) pthread_join(t[k], NULL);
  return 0;
}
