// For the tests of the helpers' own deadlines: a helper started with its debug fault hook set
// to hang, and how it ended and how long after a given moment (the test waits, no kill: the
// helper must end by itself, and reaps it).
#pragma once

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "pathprof/stepping/helper_process.h"

namespace pathprof::testing {

struct HelperEnd {
  bool reaped = false;
  int signal = 0;           // the signal that ended it; 0: it exited
  std::string description;  // "exited with status N" or "killed by signal N (...)"
  double seconds = 0;       // from `since` until it was reaped
};

// `path` started with `args` on its fd 3 and the environment variable `fault_variable` (its debug
// fault hook, builds with assertions only) set to "hang"; `sock` gets this side of the socket.
inline Result<pid_t> SpawnHangingHelper(const std::string& path, const char* fault_variable,
                                        const std::vector<std::string>& args, int* sock) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    return Error(ErrorCode::kResourceExhausted, "socketpair failed");
  setenv(fault_variable, "hang", 1);
  auto pid = stepping::SpawnHelper(path, args, {ends[1]});
  unsetenv(fault_variable);
  close(ends[1]);
  if (!pid.ok()) {
    close(ends[0]);
    return pid.status();
  }
  *sock = ends[0];
  return *pid;
}

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
