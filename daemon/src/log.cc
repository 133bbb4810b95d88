#include "pathprof/daemon/log.h"

#include <cstdio>
#include <string>

namespace pathprof::daemon {
namespace {
std::atomic<int> g_level{kLogInfo};
}

void SetLogLevel(int max_priority) {
  g_level = max_priority;
}

void Log(int priority, const char* format, ...) {
  if (priority > g_level.load(std::memory_order_relaxed)) return;
  char buf[2048];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  // One write per line, so lines from different threads never interleave.
  std::string line = "<" + std::to_string(priority) + ">" + buf;
  for (size_t i = 1; i < line.size(); ++i)
    if (line[i] == '\n') line[i] = ' ';
  line += '\n';
  fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace pathprof::daemon
