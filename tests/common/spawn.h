// A child process running argv (execv: argv[0] is a path), for tests that watch a live program.
// Returns the child's pid (exit status 127 when the exec fails), or -1 when fork fails.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

namespace pathprof::testing {

inline pid_t SpawnArgv(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

}  // namespace pathprof::testing
