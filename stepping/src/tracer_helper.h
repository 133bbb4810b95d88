// pathprof-tracer, the helper every ptrace burst session runs in: a process of its own, started
// by exec (posix_spawn), never by a fork of the multithreaded daemon that would go on running
// the daemon's code. Found, in this order, at $PATHPROF_TRACER, next to the running executable
// (the build tree's bin/), or at the installed path (PATHPROF_TRACER_INSTALL_PATH).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/stepping/helper_process.h"

namespace pathprof::stepping {

struct HelperProcess {
  pid_t pid = -1;
  int pidfd = -1;       // for bounded waits on its exit
  int control_fd = -1;  // ours to write; the helper's fd 3
  int data_fd = -1;     // ours to read; the helper's fd 4
};

// The helper's path, or an error naming every place searched.
Result<std::string> TracerHelperPath();

// Starts the helper with `args` (after argv[0]), control and data pipes on its fds 3 and 4,
// every other descriptor closed, and our environment (so a simulated quirk reaches it).
// `raise_priority`: run it at a higher scheduling priority (never for a helper that will run
// as an unprivileged user, who could then borrow that priority by tracing it).
Result<HelperProcess> SpawnTracerHelper(const std::vector<std::string>& args,
                                        bool raise_priority = false);

}  // namespace pathprof::stepping
