// The one reader of /sys, as procfs.h is of /proc: the host's capabilities (kernel BTF, the
// intel_pt PMU), the online CPUs and cgroup v2 membership are read here, with bounded reads,
// O_CLOEXEC descriptors, and a root a test can point at a fake tree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "pathprof/core/status.h"

namespace pathprof::sysfs {

class Sysfs {
 public:
  // The largest file read whole (a cgroup.procs of a very large group stays under it).
  static constexpr size_t kMaxFileBytes = size_t{16} << 20;

  explicit Sysfs(std::string root = "/sys") : root_(std::move(root)) {}
  // The host's /sys.
  static const Sysfs& Host();

  const std::string& root() const { return root_; }
  // root/RELATIVE ("kernel/btf/vmlinux"; a leading '/' is allowed).
  std::string Path(std::string_view relative) const;
  // A file whole, trailing newlines trimmed, at most max_bytes (kResourceExhausted past it).
  // kNotFound when it does not exist, kPermission when this user may not read it; both name
  // the path.
  Result<std::string> Read(std::string_view relative, size_t max_bytes = kMaxFileBytes) const;
  // The integer a file starts with; `fallback` when it cannot be read or holds none.
  int ReadInt(std::string_view relative, int fallback) const;
  bool Exists(std::string_view relative) const;

 private:
  std::string root_;
};

}  // namespace pathprof::sysfs
