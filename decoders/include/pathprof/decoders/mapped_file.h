// Opening the file behind a live process's mapping, and opening any file with a requester's
// file-system credentials.
//
// The daemon runs as root; a path in /proc/PID/maps is only a name the target's owner controls
// (replaced by a symlink after the mapping was made, or bind-mounted over inside the owner's
// own mount namespace). So a mapping is opened as the file it maps — /proc/PID/map_files/
// START-END, which the kernel resolves to the mapped inode — or, where that entry is gone,
// by path only if the opened file's device and inode are the ones the maps line names. For a
// confined (non-admin) session the open runs with the requester's fsuid/fsgid, so the daemon
// never reads a file its requester could not have read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "pathprof/core/status.h"

namespace pathprof::decoders {

struct Mapping;

// The fsuid/fsgid a file is opened with (setfsuid(2): per thread, and it drops the file-system
// capabilities, so root's DAC override does not apply).
struct FileCredentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// How the files behind a process's mappings are reached: a live process's pid (0 for a
// recording, whose files are found by path and build-id) and whose rights to open them with
// (nullopt: the caller's own).
struct FileAccess {
  int live_pid = 0;
  std::optional<FileCredentials> open_as;
};

// An owned file descriptor, closed at scope exit.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) — O_NONBLOCK so that a FIFO put where a file
// was expected cannot block the caller — with `as`'s fsuid/fsgid on this thread for the call.
// kPermission when `as` may not read it, kNotFound when it does not exist.
Result<UniqueFd> OpenFileAs(const std::string& path, const std::optional<FileCredentials>& as);

// The file mapped at `m` in live process `pid`, as described above. kNotFound when neither the
// map_files entry nor a file with the mapping's device and inode can be opened.
Result<UniqueFd> OpenMappedFile(int pid, const Mapping& m,
                                const std::optional<FileCredentials>& as);

}  // namespace pathprof::decoders
