/* Threads asleep in system calls that are never restarted after a stop (signal(7)): epoll_wait
 * with a timeout, sigtimedwait with a timeout, and recv on a socket with SO_RCVTIMEO. Nothing
 * ever wakes them but their timeouts, and each counts the calls that returned EINTR: untraced
 * every count is 0, so a tracer that interrupts a sleeping thread (or one that falls asleep as
 * it is interrupted) and lets the call fail shows here. Beside them a worker alternates a busy
 * loop with a sleep (nanosleep, which the kernel restarts): the thread worth a window, and half
 * of the time no thread of the process runs at all.
 * No signal of its own either: the run ends on the clock, read by the main thread only.
 * Usage: example_sleepers [--seconds S] [--timeout-ms T] [--stdin]   (default 3 s, 2 ms; with
 * --stdin it also ends when its standard input does)
 * Prints "busy TID" once every thread runs, and at exit
 * "eintr epoll E sigtimedwait S recv R calls C rounds N" (exit 0 iff E = S = R = 0). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>

#include "busy_work.h"
#include "code_pages.h"

static atomic_int stop;
static atomic_ulong eintr_epoll, eintr_sigtimedwait, eintr_recv, calls, busy_rounds;
static atomic_int busy_tid;
static long timeout_ms = 2;

static void Fail(const char* what) {
  perror(what);
  exit(2);
}

/* Counts one call's result: EINTR is the failure this program exists to show. */
static void Count(long r, atomic_ulong* eintr, const char* what) {
  atomic_fetch_add(&calls, 1);
  if (r >= 0) return;
  if (errno == EINTR)
    atomic_fetch_add(eintr, 1);
  else if (errno != EAGAIN && errno != EWOULDBLOCK)
    Fail(what);
}

static void* EpollSleeper(void* arg) {
  (void)arg;
  const int ep = epoll_create1(0);
  const int ev = eventfd(0, 0); /* never written: only the timeout ends a wait */
  struct epoll_event e = {.events = EPOLLIN};
  if (ep < 0 || ev < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e) != 0) Fail("epoll");
  while (!atomic_load(&stop))
    Count(epoll_wait(ep, &e, 1, (int)timeout_ms), &eintr_epoll, "epoll_wait");
  return NULL;
}

static void* SigtimedwaitSleeper(void* arg) {
  (void)arg;
  sigset_t set; /* SIGUSR2, blocked in every thread and never sent */
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  const struct timespec t = {0, timeout_ms * 1000000};
  while (!atomic_load(&stop))
    Count(sigtimedwait(&set, NULL, &t), &eintr_sigtimedwait, "sigtimedwait");
  return NULL;
}

static void* RecvSleeper(void* arg) {
  (void)arg;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Fail("socketpair");
  const struct timeval t = {0, timeout_ms * 1000};
  if (setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t) != 0) Fail("SO_RCVTIMEO");
  char c;
  while (!atomic_load(&stop)) Count(recv(sv[0], &c, 1, 0), &eintr_recv, "recv");
  return NULL;
}

/* Busy for a while (a counted loop, a few milliseconds here), then asleep as long. */
static void* Busy(void* arg) {
  (void)arg;
  atomic_store(&busy_tid, (int)syscall(SYS_gettid));
  const struct timespec nap = {0, timeout_ms * 1000000};
  while (!atomic_load(&stop)) {
    for (int k = 0; k < 2000; ++k) sink = Spin(spin_n);
    atomic_fetch_add(&busy_rounds, 1);
    while (nanosleep(&nap, NULL) != 0 && errno == EINTR) {
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  const double seconds = SecondsArg(argc, argv, 3);
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--timeout-ms")) timeout_ms = strtol(argv[i + 1], NULL, 10);
  setvbuf(stdout, NULL, _IOLBF, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by every thread */
  void* (*bodies[])(void*) = {EpollSleeper, SigtimedwaitSleeper, RecvSleeper, Busy};
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i)
    if (pthread_create(&threads[i], NULL, bodies[i], NULL) != 0) Fail("pthread_create");
  while (atomic_load(&busy_tid) == 0 || atomic_load(&calls) < 3) {
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  printf("busy %d\n", atomic_load(&busy_tid));
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += (time_t)seconds;
  end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
  if (end.tv_nsec >= 1000000000) {
    end.tv_sec += 1;
    end.tv_nsec -= 1000000000;
  }
  if (HasFlag(argc, argv, "--stdin")) {
    /* Ends early at the end of its input (poll, restarted by the kernel after a stop). */
    struct pollfd in = {.fd = 0, .events = POLLIN};
    for (;;) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      const long ms = (end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
      if (ms <= 0) break;
      const int r = poll(&in, 1, (int)ms);
      char c;
      if (r > 0 && read(0, &c, 1) <= 0) break;
    }
  } else {
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  const unsigned long e = atomic_load(&eintr_epoll), s = atomic_load(&eintr_sigtimedwait),
                      r = atomic_load(&eintr_recv);
  printf("eintr epoll %lu sigtimedwait %lu recv %lu calls %lu rounds %lu\n", e, s, r,
         atomic_load(&calls), atomic_load(&busy_rounds));
  return e + s + r == 0 ? 0 : 1;
}
