// What reading a process's image needs rights for (ProcessImage): its maps and pagemap, opened
// through /proc with this process's rights, and the files its mappings map, opened with a
// requester's. In the process that collects (DirectProcessAccess) these are plain opens; in the
// sandboxed emulator helper, which may open nothing, they are descriptors the collector opens on
// request and passes over its socket (emulator_client.h, pathprof_emulator.cc): the helper reads
// them, never names them.
#pragma once

#include <sys/types.h>

#include <optional>

#include "pathprof/core/status.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/mapped_file.h"

namespace pathprof::collectors {

class ProcessAccess {
 public:
  virtual ~ProcessAccess() = default;
  // The process's mappings as /proc/PID/maps has them now.
  virtual Result<decoders::AddressSpace> ReadMaps(pid_t pid) = 0;
  // /proc/PID/pagemap, open for reading.
  virtual Result<decoders::UniqueFd> OpenPagemap(pid_t pid) = 0;
  // The file mapped at `m` (decoders::OpenMappedFile), open for reading.
  virtual Result<decoders::UniqueFd> OpenMapped(pid_t pid, const decoders::Mapping& m) = 0;
  // The process's threads now (/proc/PID/status), for a kernel whose samples do not carry it;
  // nullopt: not known.
  virtual std::optional<uint32_t> Threads(pid_t pid) = 0;
  // What was kept of `pid` goes (it exited, exec'd or was forgotten).
  virtual void Forget(pid_t) {}
};

// In this process, with its rights; files opened with `open_as`'s (nullopt: its own).
class DirectProcessAccess final : public ProcessAccess {
 public:
  explicit DirectProcessAccess(std::optional<decoders::FileCredentials> open_as)
      : open_as_(std::move(open_as)) {}
  Result<decoders::AddressSpace> ReadMaps(pid_t pid) override;
  Result<decoders::UniqueFd> OpenPagemap(pid_t pid) override;
  Result<decoders::UniqueFd> OpenMapped(pid_t pid, const decoders::Mapping& m) override;
  std::optional<uint32_t> Threads(pid_t pid) override;

 private:
  std::optional<decoders::FileCredentials> open_as_;
};

}  // namespace pathprof::collectors
