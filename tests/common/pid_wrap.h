// Making the kernel's process ids wrap soon: the next id handed out is pid_max - `ids_left`,
// and the ones after it start again from the bottom (300). For tests of code that orders
// threads or processes by id, which a long test run (thousands of forks under a default
// pid_max of 32,768) wraps at any moment. Needs CAP_SYS_ADMIN over the pid namespace; host-wide
// but harmless: ids are still unique, only where the next search starts moves.
#pragma once

#include <fstream>
#include <string>

#include "pathprof/core/procfs.h"

namespace pathprof::testing {

// False when ns_last_pid could not be written (not root, or a kernel without it).
inline bool WrapPidsSoon(int ids_left) {
  const int pid_max = procfs::Procfs::Host().ReadSysctlInt("sys/kernel/pid_max", 0);
  if (pid_max <= ids_left + 1) return false;
  std::ofstream out("/proc/sys/kernel/ns_last_pid");
  out << (pid_max - ids_left - 1);
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace pathprof::testing
