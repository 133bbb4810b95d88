#include "process_tree.h"

#include <errno.h>
#include <signal.h>

#include <map>

#include "pathprof/core/procfs.h"

namespace pathprof::pipeline {

bool ProcessAlive(uint32_t pid) {
  auto stat = procfs::Procfs::Host().ReadStat(static_cast<pid_t>(pid));
  return stat.ok() && stat->state != 'Z' && stat->state != 'X';
}

bool ProcessExists(uint32_t pid) {
  // EPERM (a process this one may not signal) says it exists.
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

std::vector<uint32_t> Descendants(const std::vector<uint32_t>& roots) {
  std::map<uint32_t, std::vector<uint32_t>> children;
  const procfs::Procfs& proc = procfs::Procfs::Host();
  for (pid_t pid : proc.Pids()) {
    auto stat = proc.ReadStat(pid);
    if (stat.ok())
      children[static_cast<uint32_t>(stat->ppid)].push_back(static_cast<uint32_t>(pid));
  }
  std::vector<uint32_t> out;
  std::vector<uint32_t> todo(roots.begin(), roots.end());
  while (!todo.empty() && out.size() < 4096) {
    const uint32_t pid = todo.back();
    todo.pop_back();
    for (uint32_t child : children[pid]) {
      out.push_back(child);
      todo.push_back(child);
    }
  }
  return out;
}

}  // namespace pathprof::pipeline
