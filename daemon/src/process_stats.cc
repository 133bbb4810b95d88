#include "process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "pathprof/core/procfs.h"

namespace pathprof::daemon {

uint64_t DaemonRssBytes() {
  // statm: "size resident shared text lib data dt", in pages.
  auto statm = procfs::Procfs::Host().Read(getpid(), "statm", 4096);
  if (!statm.ok()) return 0;
  const char* resident = std::strchr(statm->c_str(), ' ');
  if (resident == nullptr) return 0;
  return std::strtoull(resident + 1, nullptr, 10) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

double DaemonCpuSeconds() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

uint64_t DaemonOpenFds() {
  const auto fds = procfs::Procfs::Host().NumericEntries(getpid(), "fd", 1 << 20);
  return fds.empty() ? 0 : fds.size() - 1;  // less the one reading the directory holds
}

}  // namespace pathprof::daemon
