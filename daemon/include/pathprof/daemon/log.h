// Logs to stderr in the form journald understands: each line starts with "<N>", N the syslog
// priority (3 error, 4 warning, 5 notice, 6 info, 7 debug), so `journalctl -p` filters work.
#pragma once

#include <atomic>
#include <cstdarg>

namespace pathprof::daemon {

enum LogPriority { kLogError = 3, kLogWarning = 4, kLogNotice = 5, kLogInfo = 6, kLogDebug = 7 };

void SetLogLevel(int max_priority);
void Log(int priority, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace pathprof::daemon
