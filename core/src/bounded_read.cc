#include "bounded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

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

Status ReadBoundedLines(const std::string& path, size_t max_bytes, size_t max_line_bytes,
                        OpenErrorFn open_error,
                        const std::function<void(std::string_view line)>& on_line) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  // One buffer: whole lines are handed out from it, a line cut by the end of a read moves to
  // its front and the next read appends to it. It holds a line of max_line_bytes plus a read.
  constexpr size_t kReadBytes = 64 * 1024;
  const size_t capacity = max_line_bytes + kReadBytes;
  std::unique_ptr<char[]> buf(new char[capacity]);
  size_t held = 0;  // bytes of an unfinished line at the front
  size_t total = 0;
  Status status = Status::Ok();
  for (;;) {
    const ssize_t n = read(fd, buf.get() + held, kReadBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = open_error(path, errno);
      break;
    }
    if (n == 0) {
      if (held > 0) on_line(std::string_view(buf.get(), held));
      break;
    }
    total += static_cast<size_t>(n);
    if (total > max_bytes) {
      status = Error(ErrorCode::kResourceExhausted,
                     path + ": more than " + std::to_string(max_bytes) + " bytes");
      break;
    }
    const size_t end = held + static_cast<size_t>(n);
    size_t begin = 0;
    for (;;) {
      const void* nl = std::memchr(buf.get() + begin, '\n', end - begin);
      if (nl == nullptr) break;
      const size_t at = static_cast<size_t>(static_cast<const char*>(nl) - buf.get());
      if (at - begin > max_line_bytes) break;
      on_line(std::string_view(buf.get() + begin, at - begin));
      begin = at + 1;
    }
    held = end - begin;
    // A line past the bound, whether a read ended inside it or not.
    if (held > max_line_bytes) {
      status = Error(ErrorCode::kCorrupt,
                     path + ": a line longer than " + std::to_string(max_line_bytes) + " bytes");
      break;
    }
    std::memmove(buf.get(), buf.get() + begin, held);
  }
  close(fd);
  return status;
}

}  // namespace pathprof::internal
