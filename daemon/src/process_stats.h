// The daemon's own cost, for GetStats and /metrics.
#pragma once

#include <cstdint>

namespace pathprof::daemon {

uint64_t DaemonRssBytes();  // resident set, from /proc/self/statm
double DaemonCpuSeconds();  // user + system, from getrusage
uint64_t DaemonOpenFds();   // entries of /proc/self/fd

}  // namespace pathprof::daemon
