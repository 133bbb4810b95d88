/* Heap sort of pseudo-random integers (the OSP paper's heap sort workload, small).
 * Hot loop: the sift-down loop in sift_down().
 * Usage: example_heapsort [SORTS]: sorts SORTS arrays (default 1), each from where the random
 * sequence left off, so a longer run has the same path mix with more of each path. */
#include <stdio.h>
#include <stdlib.h>

#define N 1000

static unsigned lcg(unsigned* s) {
  return *s = *s * 1103515245u + 12345u;
}

__attribute__((noinline)) static void sift_down(int* a, int start, int end) {
  int root = start;
  while (2 * root + 1 <= end) { /* the sift-down loop */
    int child = 2 * root + 1, swap = root;
    if (a[swap] < a[child]) swap = child;
    if (child + 1 <= end && a[swap] < a[child + 1]) swap = child + 1;
    if (swap == root) return;
    int t = a[root];
    a[root] = a[swap];
    a[swap] = t;
    root = swap;
  }
}

static void heap_sort(int* a, int n) {
  for (int start = (n - 2) / 2; start >= 0; --start) sift_down(a, start, n - 1);
  for (int end = n - 1; end > 0; --end) {
    int t = a[end];
    a[end] = a[0];
    a[0] = t;
    sift_down(a, 0, end - 1);
  }
}

int main(int argc, char** argv) {
  static int a[N];
  unsigned seed = 42;
  const int sorts = argc > 1 ? atoi(argv[1]) : 1;
  for (int s = 0; s < sorts; ++s) {
    for (int i = 0; i < N; ++i) a[i] = (int)(lcg(&seed) >> 8);
    heap_sort(a, N);
    for (int i = 1; i < N; ++i)
      if (a[i - 1] > a[i]) return 1;
  }
  printf("heapsort: sorted %d x %d\n", sorts, N);
  return 0;
}
