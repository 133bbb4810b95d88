// A kernel file (/proc, /sys) read whole with plain open/read, at most `max_bytes`: the one loop
// procfs.h and sysfs.h share. Their own messages for a file that cannot be opened come from
// `open_error` (errno to a Status naming the path).
#pragma once

#include <cstddef>
#include <string>

#include "pathprof/core/status.h"

namespace pathprof::internal {

using OpenErrorFn = Status (*)(const std::string& path, int err);

// kResourceExhausted past `max_bytes`; every fd is O_CLOEXEC and closed on return.
Result<std::string> ReadBounded(const std::string& path, size_t max_bytes, OpenErrorFn open_error);

}  // namespace pathprof::internal
