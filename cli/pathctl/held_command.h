// A command forked and held before its exec, as perf record holds its workload: profiling
// attaches to the process first, then the command runs, so that even a command that exits
// within microseconds is profiled from its first instruction (and never met as a zombie).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathctl {

class HeldCommand {
 public:
  // Forks; the child waits for Release() before it execs `argv` (PATH searched).
  // `stdout_to_stderr`: the command writes its standard output to pathctl's standard error,
  // where pathctl's own standard output carries a report that must stay whole (run --json).
  static pathprof::Result<HeldCommand> Fork(const std::vector<std::string>& argv,
                                            bool stdout_to_stderr = false);
  HeldCommand(HeldCommand&& other) noexcept;
  HeldCommand& operator=(HeldCommand&&) = delete;
  // A child never released is killed and reaped: nothing to profile it with.
  ~HeldCommand();

  pid_t pid() const { return pid_; }
  // Lets the child exec and waits until it has (a close-on-exec pipe closes). A failed exec is
  // an error naming the command; that child has exited 127 and is reaped.
  pathprof::Status Release();

 private:
  HeldCommand(pid_t pid, int go_fd, int exec_fd, std::string name)
      : pid_(pid), go_fd_(go_fd), exec_fd_(exec_fd), name_(std::move(name)) {}
  pid_t pid_ = -1;
  int go_fd_ = -1;    // written once: the child may exec
  int exec_fd_ = -1;  // EOF once the exec succeeded; the child's errno if it failed
  std::string name_;
  bool released_ = false;
};

}  // namespace pathctl
