#include "process_access.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "pathprof/core/procfs.h"

namespace pathprof::collectors {

Result<decoders::AddressSpace> DirectProcessAccess::ReadMaps(pid_t pid) {
  return decoders::ReadProcMaps(pid);
}

Result<decoders::UniqueFd> DirectProcessAccess::OpenPagemap(pid_t pid) {
  const int fd = procfs::Procfs::Host().Open(pid, "pagemap", O_RDONLY);
  if (fd < 0) {
    const int err = errno;
    return Error(ErrorCode::kUnavailable,
                 procfs::Procfs::Host().Path(pid, "pagemap") + ": " + std::strerror(err));
  }
  return decoders::UniqueFd(fd);
}

Result<decoders::UniqueFd> DirectProcessAccess::OpenMapped(pid_t pid, const decoders::Mapping& m) {
  return decoders::OpenMappedFile(pid, m, open_as_);
}

std::optional<uint32_t> DirectProcessAccess::Threads(pid_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  if (!status.ok()) return std::nullopt;
  return static_cast<uint32_t>(status->threads);
}

}  // namespace pathprof::collectors
