// The helper processes pathprof interprets others' code in (pathprof-tracer, stepping/;
// pathprof-emulator, collectors/): each a process of its own, started by exec (posix_spawn),
// never by a fork of a multithreaded daemon that would go on running the daemon's code, so that
// it can drop its rights and enter its sandbox (helper_sandbox.h) without touching ours.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::stepping {

// Where a helper is looked for, in this order: $`env_var`, next to the running executable (the
// build tree's bin/, an installed package's libexec when run from there), `install_path`,
// `build_path`.
struct HelperLocation {
  std::string name;  // the executable's file name, e.g. "pathprof-tracer"
  std::string env_var;
  std::string install_path;
  std::string build_path;
  std::string purpose;  // for the error: "the ptrace helper"
};
// The helper's path, or an error naming every place searched.
Result<std::string> FindHelper(const HelperLocation& where);

// Starts `path` with `args` (after argv[0]), `child_fds` on its fds 3, 4, ... in order, every
// other descriptor closed, and our environment (so a simulated quirk reaches it). The caller
// keeps its copies of `child_fds` (and closes them). The pid is remembered as this process's
// helper until ForgetHelper.
Result<pid_t> SpawnHelper(const std::string& path, const std::vector<std::string>& args,
                          const std::vector<int>& child_fds);

// Whether `pid` is a helper this process started and has not yet reaped (the daemon refuses to
// profile its own helpers).
bool IsOwnHelper(pid_t pid);
void ForgetHelper(pid_t pid);

// Waits at most `timeout_ms` for helper `pid` to exit (on its pidfd, -1 if none), kills it past
// that and waits a little more: its wait status once reaped (and forgotten). Never waits on
// without bound: kHelperNotKilled when the kill was refused (a helper running as another user,
// this process without CAP_KILL), kHelperNotReaped when a killed helper had not ended 2 s later;
// either is reaped by a later SpawnHelper or ReapHelper once it has ended.
inline constexpr int kHelperNotKilled = -1;
inline constexpr int kHelperNotReaped = -2;
int ReapHelper(pid_t pid, int pidfd, int timeout_ms);
// "exited with status 1", "was killed by signal 31 (Bad system call)", "could not be killed
// (...)".
std::string DescribeHelperExit(int wait_status);

}  // namespace pathprof::stepping
