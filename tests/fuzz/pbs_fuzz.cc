// libFuzzer target for the .pbs reader (`pathctl import`, `analyze` and replays read these files,
// which may come from anywhere). The input is the file.
// Properties: no crash or sanitizer report; the same records or the same failure whether read
// from memory (PbsReader::FromBytes) or from a file (PbsReader::Open, over a memfd); and what
// reads cleanly, written again by PbsWriter, reads back equal.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "pathprof/core/pbs.h"
#include "pathprof/core/procfs.h"

namespace {

struct Memfd {
  explicit Memfd(const char* name) : fd(memfd_create(name, 0)) {
    if (fd < 0) std::abort();
    path = pathprof::procfs::Procfs::Host().Path(getpid(), "fd/" + std::to_string(fd));
  }
  int fd;
  std::string path;
};

bool Same(const pathprof::PbsContents& a, const pathprof::PbsContents& b) {
  return a.batches == b.batches && a.images == b.images && a.meta == b.meta;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Memfd input("pbs_fuzz_input"), rewritten("pbs_fuzz_rewritten");
  auto reader = pathprof::PbsReader::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz");
  pathprof::Result<pathprof::PbsContents> from_bytes =
      reader.ok() ? pathprof::ReadPbs(&*reader)
                  : pathprof::Result<pathprof::PbsContents>(reader.status());

  if (ftruncate(input.fd, 0) != 0 || pwrite(input.fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  auto from_file = pathprof::ReadPbsFile(input.path);
  if (from_file.ok() != from_bytes.ok()) std::abort();
  if (!from_bytes.ok()) {
    if (from_file.status().code() != from_bytes.status().code()) std::abort();
    return 0;
  }
  if (!Same(*from_file, *from_bytes)) std::abort();

  if (ftruncate(rewritten.fd, 0) != 0) std::abort();
  if (!pathprof::WritePbsFile(rewritten.path, *from_bytes).ok()) std::abort();
  auto again = pathprof::ReadPbsFile(rewritten.path);
  if (!again.ok() || !Same(*again, *from_bytes)) std::abort();
  return 0;
}
