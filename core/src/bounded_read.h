// A kernel file (/proc, /sys) read whole with plain open/read, at most `max_bytes`: the one loop
// procfs.h and sysfs.h share. Their own messages for a file that cannot be opened come from
// `open_error` (errno to a Status naming the path).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "pathprof/core/status.h"

namespace pathprof::internal {

using OpenErrorFn = Status (*)(const std::string& path, int err);

// kResourceExhausted past `max_bytes`; every fd is O_CLOEXEC and closed on return.
Result<std::string> ReadBounded(const std::string& path, size_t max_bytes, OpenErrorFn open_error);

// The same file line by line, never held whole: `on_line` gets each line without its newline (a
// last line without one too). kResourceExhausted past `max_bytes`, kCorrupt for a line longer
// than `max_line_bytes`; both name the path.
Status ReadBoundedLines(const std::string& path, size_t max_bytes, size_t max_line_bytes,
                        OpenErrorFn open_error,
                        const std::function<void(std::string_view line)>& on_line);

}  // namespace pathprof::internal
