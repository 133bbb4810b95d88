#include "bounded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace pathprof::internal {

Result<std::string> ReadBounded(const std::string& path, size_t max_bytes, OpenErrorFn open_error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  // Read through a buffer and append: the string grows by doubling and touches only the bytes
  // written. (Reading straight into a string resized ahead zero-filled each doubling first:
  // kallsyms, 5 MB, took twice its size in fresh pages and a copy per doubling, a seventh of a
  // short `pathctl run`'s CPU.) A status file fits the first read.
  std::string out;
  char buf[16 * 1024];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      // A process that exits mid-read makes the read fail with ESRCH.
      return open_error(path, err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      close(fd);
      return Error(ErrorCode::kResourceExhausted,
                   path + ": more than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace pathprof::internal
