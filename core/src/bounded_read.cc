#include "bounded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace pathprof::internal {

Result<std::string> ReadBounded(const std::string& path, size_t max_bytes, OpenErrorFn open_error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  // Read straight into the string, growing it (kallsyms is megabytes; a status file fits the
  // first 4 KiB).
  std::string out;
  size_t used = 0;
  for (;;) {
    if (out.size() - used < 4096) out.resize(std::max<size_t>(4096, out.size() * 2));
    const ssize_t n = read(fd, out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      // A process that exits mid-read makes the read fail with ESRCH.
      return open_error(path, err);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used > max_bytes) {
      close(fd);
      return Error(ErrorCode::kResourceExhausted,
                   path + ": more than " + std::to_string(max_bytes) + " bytes");
    }
  }
  close(fd);
  out.resize(used);
  return out;
}

}  // namespace pathprof::internal
