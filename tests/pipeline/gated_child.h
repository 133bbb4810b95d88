// Children for the live pipeline tests: forked at once, held at a gate until the test releases
// them (so a session can start first), then running the test's function for some CPU seconds.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
  int gate = -1;  // a byte written to it lets the child run
  void Release() {
    const char go = 1;
    // Fails only if the child died (a test may kill it first): no SIGPIPE for that.
    [[maybe_unused]] const ssize_t n = send(gate, &go, 1, MSG_NOSIGNAL);
    close(gate);
    gate = -1;
  }
};

// Forks a child that waits for Release(), runs work(seconds) and then exits or, with `park`,
// blocks without using CPU until it is killed. pid -1 when it could not be started.
// The gate opens on a byte, not on end-of-file: a child forked later inherits this child's write
// end, and would hold the gate shut. A child dies with the test, so a failed assertion that
// returns before the test kills it leaves no process holding ctest's output open.
inline GatedChild SpawnGated(void (*work)(double), double seconds, bool park) {
  int gate[2];  // a socket pair, not a pipe: Release's send must not raise SIGPIPE
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(gate[1]);
    char c;
    if (read(gate[0], &c, 1) != 1) _exit(0);  // the test ended without releasing it
    work(seconds);
    while (park) pause();  // taking no CPU until SIGKILL
    _exit(0);
  }
  close(gate[0]);
  return {pid, gate[1]};
}

}  // namespace pathprof::testing
