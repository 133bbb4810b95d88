#include "pathprof/core/sysfs.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "bounded_read.h"

namespace pathprof::sysfs {
namespace {

Status OpenError(const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR)
    return Status(ErrorCode::kNotFound,
                  path + ": no such file (the kernel lacks it, or /sys is not mounted)");
  if (err == EACCES || err == EPERM)
    return Status(ErrorCode::kPermission, path + ": permission denied");
  return Status(ErrorCode::kIo, path + ": " + std::strerror(err));
}

}  // namespace

const Sysfs& Sysfs::Host() {
  static const Sysfs host;
  return host;
}

std::string Sysfs::Path(std::string_view relative) const {
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  return root_ + "/" + std::string(relative);
}

Result<std::string> Sysfs::Read(std::string_view relative, size_t max_bytes) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text,
                            internal::ReadBounded(Path(relative), max_bytes, OpenError));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

int Sysfs::ReadInt(std::string_view relative, int fallback) const {
  auto text = Read(relative, 4096);
  if (!text.ok()) return fallback;
  int value = fallback;
  const char* begin = text->data();
  return std::from_chars(begin, begin + text->size(), value).ec == std::errc() ? value : fallback;
}

bool Sysfs::Exists(std::string_view relative) const {
  return access(Path(relative).c_str(), F_OK) == 0;
}

}  // namespace pathprof::sysfs
