#include "pathprof/decoders/mapped_file.h"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"

namespace pathprof::decoders {
namespace {

// Switches this thread's fsuid/fsgid for one scope. setfsuid(2) acts on the calling thread only
// (glibc does not broadcast it, unlike setuid), so other threads of the daemon keep root's.
// The group goes first: once the fsuid is not 0, the thread has lost CAP_SETGID's use for fs ids.
class ScopedFsCredentials {
 public:
  explicit ScopedFsCredentials(const std::optional<FileCredentials>& as) : active_(as.has_value()) {
    if (!active_) return;
    old_gid_ = static_cast<gid_t>(setfsgid(as->gid));
    old_uid_ = static_cast<uid_t>(setfsuid(as->uid));
  }
  ~ScopedFsCredentials() {
    if (!active_) return;
    setfsuid(old_uid_);
    setfsgid(old_gid_);
  }
  ScopedFsCredentials(const ScopedFsCredentials&) = delete;
  ScopedFsCredentials& operator=(const ScopedFsCredentials&) = delete;

 private:
  bool active_ = false;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
};

std::string Who(const std::optional<FileCredentials>& as) {
  return as ? " as uid " + std::to_string(as->uid) : "";
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.Release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// `open_fd()` (an open of `path`) run with the file system credentials of `as`.
Result<UniqueFd> OpenWithCredentials(const std::string& path,
                                     const std::optional<FileCredentials>& as,
                                     const std::function<int()>& open_fd) {
  int fd = -1;
  int err = 0;
  {
    ScopedFsCredentials scope(as);
    fd = open_fd();
    err = errno;
  }
  if (fd >= 0) return UniqueFd(fd);
  const ErrorCode code = err == EACCES || err == EPERM     ? ErrorCode::kPermission
                         : err == ENOENT || err == ENOTDIR ? ErrorCode::kNotFound
                                                           : ErrorCode::kIo;
  return Error(code, "cannot open " + path + Who(as) + " (" + std::strerror(err) + ")");
}

}  // namespace

Result<UniqueFd> OpenFileAs(const std::string& path, const std::optional<FileCredentials>& as) {
  return OpenWithCredentials(
      path, as, [&path] { return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); });
}

Result<UniqueFd> OpenMappedFile(int pid, const Mapping& m,
                                const std::optional<FileCredentials>& as) {
  char range[48];
  std::snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(m.start),
                static_cast<unsigned long long>(m.end()));
  const std::string entry = std::string("map_files/") + range;
  const procfs::Procfs& proc = procfs::Procfs::Host();
  auto direct = OpenWithCredentials(proc.Path(pid, entry), as,
                                    [&] { return proc.Open(pid, entry, O_RDONLY | O_NONBLOCK); });
  if (direct.ok() || direct.status().code() == ErrorCode::kPermission) return direct;
  // The entry is gone (the process exited, or unmapped the range since its maps were read).
  // The path is a name only: it counts only if it still names the inode that was mapped.
  if (m.inode == 0) return direct.status();
  const std::string& path = m.read_path.empty() ? m.path : m.read_path;
  PATHPROF_ASSIGN_OR_RETURN(UniqueFd fd, OpenFileAs(path, as));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || st.st_ino != m.inode || st.st_dev != m.device) {
    return Error(ErrorCode::kNotFound,
                 path + " is no longer the file process " + std::to_string(pid) +
                     " mapped (device or inode differ); its code is not read");
  }
  return fd;
}

}  // namespace pathprof::decoders
