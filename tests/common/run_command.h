// Runs a shell command from a test and captures its standard output and exit status: tests
// compare against peers (perf, addr2line, go tool pprof) and drive our own binaries this way.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pathprof::testing {

struct CommandResult {
  std::string out;  // standard output only; redirect stderr in `cmd` if it matters
  int rc = -1;      // exit status, or -1 if the command could not run or was killed
};

inline CommandResult RunCommand(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace pathprof::testing
