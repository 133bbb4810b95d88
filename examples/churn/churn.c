/* A busy process that keeps changing shape, for the tracers' fault tests: the main thread runs
 * a hot loop (spin) while helper threads create short-lived threads and fork short-lived
 * children at set rates. Each child runs spin() too, then exits 0; a child that dies by a signal
 * instead (a SIGTRAP from a breakpoint left in its copy of the text, say) is counted as bad.
 * Usage: example_churn [--threads PER_S] [--forks PER_S] [--seconds S] [--exec-after S]
 *                      [--exec-on-usr1]
 *   --exec-after S: after S seconds the process execs itself (same options, no --exec-after).
 *   --exec-on-usr1: on SIGUSR1 the process execs itself (same options, without this one): for a
 *     test that must see the program before its exec, whatever the host's load.
 * Prints one line per second: "threads N forks N bad_children N", and a "total ..." line at
 * exit (0 when no child went bad). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned sink;
static atomic_ulong threads_made, forks_made, bad_children;
static double thread_rate, fork_rate;
static volatile sig_atomic_t exec_asked;

static void ask_for_exec(int sig) {
  (void)sig;
  exec_asked = 1;
}

__attribute__((noinline)) unsigned spin(unsigned n) {
  unsigned acc = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (i & 1u)
      acc += i * 5u;
    else
      acc ^= i;
    sink = acc;
  }
  return acc;
}

static void sleep_for(double seconds) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
}

static void* short_lived(void* arg) {
  (void)arg;
  spin(2000);
  return NULL;
}

static void* thread_maker(void* arg) {
  (void)arg;
  for (;;) {
    pthread_t t;
    if (pthread_create(&t, NULL, short_lived, NULL) == 0) {
      pthread_detach(t);
      atomic_fetch_add(&threads_made, 1);
    }
    sleep_for(1.0 / thread_rate);
  }
  return NULL;
}

static void* fork_maker(void* arg) {
  (void)arg;
  for (;;) {
    pid_t child = fork();
    if (child == 0) {
      spin(200000);
      _exit(0);
    }
    if (child > 0) {
      int st = 0;
      if (waitpid(child, &st, 0) == child && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        atomic_fetch_add(&bad_children, 1);
      atomic_fetch_add(&forks_made, 1);
    }
    sleep_for(1.0 / fork_rate);
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  double seconds = 0, exec_after = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--exec-on-usr1")) {
      signal(SIGUSR1, ask_for_exec);
      continue;
    }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "--threads")) thread_rate = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--forks")) fork_rate = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--exec-after")) exec_after = atof(argv[i + 1]);
    ++i;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_t t;
  if (thread_rate > 0) pthread_create(&t, NULL, thread_maker, NULL);
  if (fork_rate > 0) pthread_create(&t, NULL, fork_maker, NULL);
  const double start = now_s();
  double next_report = start + 1;
  unsigned long last_threads = 0, last_forks = 0;
  for (;;) {
    spin(20000);
    const double now = now_s();
    if (exec_asked || (exec_after > 0 && now - start >= exec_after)) {
      char rate_t[32], rate_f[32], secs[32];
      snprintf(rate_t, sizeof rate_t, "%g", thread_rate);
      snprintf(rate_f, sizeof rate_f, "%g", fork_rate);
      snprintf(secs, sizeof secs, "%g", seconds > 0 ? seconds - (now - start) : 0);
      execl("/proc/self/exe", argv[0], "--threads", rate_t, "--forks", rate_f, "--seconds", secs,
            (char*)NULL);
      return 126;
    }
    if (now >= next_report) {
      const unsigned long th = atomic_load(&threads_made), fk = atomic_load(&forks_made);
      printf("threads %lu forks %lu bad_children %lu\n", th - last_threads, fk - last_forks,
             atomic_load(&bad_children));
      last_threads = th;
      last_forks = fk;
      next_report += 1;
    }
    if (seconds > 0 && now - start >= seconds) break;
  }
  printf("total threads %lu forks %lu bad_children %lu\n", atomic_load(&threads_made),
         atomic_load(&forks_made), atomic_load(&bad_children));
  return atomic_load(&bad_children) == 0 ? 0 : 1;
}
