// How a helper process ended and how long after a given moment, for the tests of the helpers'
// own deadlines: the test waits (no kill: the helper must end by itself) and reaps it.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <string>

#include "pathprof/stepping/helper_process.h"

namespace pathprof::testing {

struct HelperEnd {
  bool reaped = false;
  int signal = 0;           // the signal that ended it; 0: it exited
  std::string description;  // "exited with status N" or "killed by signal N (...)"
  double seconds = 0;       // from `since` until it was reaped
};

inline HelperEnd WaitForHelperEnd(pid_t pid, std::chrono::steady_clock::time_point since) {
  HelperEnd end;
  int status = 0;
  end.reaped = waitpid(pid, &status, 0) == pid;
  end.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  if (!end.reaped) return end;
  stepping::ForgetHelper(pid);
  end.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  end.description = stepping::DescribeHelperExit(status);
  return end;
}

}  // namespace pathprof::testing
