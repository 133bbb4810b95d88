/* Iterative radix-2 FFT (the OSP paper's FFT workload, small): transforms a 512-point signal
 * forward and back several times. Hot loop: the butterfly loop in fft(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 512
#define ROUNDS 2

typedef struct {
  double re, im;
} cpx;

static void bit_reverse(cpx* a, int n) {
  for (int i = 1, j = 0; i < n; ++i) {
    int bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      cpx t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}

__attribute__((noinline)) static void fft(cpx* a, int n, int inverse) {
  bit_reverse(a, n);
  for (int len = 2; len <= n; len <<= 1) {
    double ang = 2 * M_PI / len * (inverse ? 1 : -1);
    cpx wl = {cos(ang), sin(ang)};
    for (int i = 0; i < n; i += len) {
      cpx w = {1, 0};
      for (int j = 0; j < len / 2; ++j) { /* the butterfly loop */
        cpx u = a[i + j], v = a[i + j + len / 2];
        cpx t = {v.re * w.re - v.im * w.im, v.re * w.im + v.im * w.re};
        a[i + j] = (cpx){u.re + t.re, u.im + t.im};
        a[i + j + len / 2] = (cpx){u.re - t.re, u.im - t.im};
        w = (cpx){w.re * wl.re - w.im * wl.im, w.re * wl.im + w.im * wl.re};
      }
    }
  }
  if (inverse)
    for (int i = 0; i < n; ++i) a[i].re /= n, a[i].im /= n;
}

int main(void) {
  static cpx a[N];
  for (int i = 0; i < N; ++i) a[i] = (cpx){(i * 7 % 13) - 6.0, 0};
  for (int r = 0; r < ROUNDS; ++r) {
    fft(a, N, 0);
    fft(a, N, 1);
  }
  printf("fft: a[1] = %.3f\n", a[1].re);
  return 0;
}
