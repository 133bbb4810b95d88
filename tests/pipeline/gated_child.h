// Children for the live pipeline tests: forked at once, held at a gate until the test releases
// them (so a session can start first), then running the test's function for some CPU seconds.
#pragma once

#include <time.h>
#include <unistd.h>

namespace pathprof::testing {

// CPU time, not wall time: the machine is shared, and cpu-clock samples follow CPU time.
inline double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

struct GatedChild {
  pid_t pid = -1;
  int gate = -1;  // closing it lets the child run
  void Release() {
    close(gate);
    gate = -1;
  }
};

// Forks a child that waits for Release(), runs work(seconds) and then exits or, with `park`,
// blocks without using CPU until it is killed. pid -1 when it could not be started.
inline GatedChild SpawnGated(void (*work)(double), double seconds, bool park) {
  int gate[2];
  if (pipe(gate) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(gate[1]);
    char c;
    while (read(gate[0], &c, 1) > 0) {
    }
    work(seconds);
    while (park) pause();  // taking no CPU until SIGKILL
    _exit(0);
  }
  close(gate[0]);
  return {pid, gate[1]};
}

}  // namespace pathprof::testing
