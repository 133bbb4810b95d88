// What a snapshot window needs of a process besides its sample: the pages that do not change
// while it runs (code, read-only data: decoders::StableMappings), read from the files they map
// rather than from the process, and what its mappings permit. Nothing here reads the process's
// memory or attaches to it, so it works for a process another tool already traces and under
// kernel.yama.ptrace_scope=3: /proc/PID/maps and /proc/PID/pagemap need only read access.
//
// A read-only private file mapping can still hold pages that are not the file's: RELRO, written
// by the dynamic linker before its mprotect, and text a debugger planted breakpoints in. Such a
// page is anonymous now (copied on write); /proc/PID/pagemap says so (present, not a file page),
// and it is then not served from the file. Such a page cannot change either while its mapping
// stays read-only, so a copy of it that a sample brought (a hint page asked for once: Adopt) is
// kept and served from then on; until then the window treats its bytes as unknown.
// The vdso is the same code in every process of the host: it is served from this process's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/mapped_file.h"

namespace pathprof::collectors {

class ProcessImage {
 public:
  // `open_as`: the file-system credentials the mapped files are opened with (a confined
  // session's requester); nullopt: this process's own.
  ProcessImage(pid_t pid, std::optional<decoders::FileCredentials> open_as);
  ~ProcessImage();
  ProcessImage(const ProcessImage&) = delete;
  ProcessImage& operator=(const ProcessImage&) = delete;

  struct PageInfo {
    bool mapped = false;
    bool readable = false, writable = false, executable = false;
    bool stable = false;  // in a mapping decoders::StableMappings calls stable
  };
  // The mapping of `page` as the last read of the maps has it; a page no mapping holds makes
  // the maps read again (at most every kMissRefreshNs: a region mapped since).
  PageInfo Info(uint64_t page);
  enum class StableRead : uint8_t {
    kRead,        // the bytes the process sees there
    kNotStable,   // not in a stable mapping
    kWritten,     // a page of a stable mapping that is not the file's (RELRO, a breakpoint)
    kUnreadable,  // the file could not be opened or read (counted)
  };
  StableRead ReadStable(uint64_t page, uint8_t* out);
  // A copy of `page` (kPageSize bytes) taken by a sample: kept when the page is a stable
  // mapping's page that is not the file's (ReadStable said kWritten), and served by ReadStable
  // from then on, until the mapping changes. True when kept. At most kMaxAdopted pages.
  bool Adopt(uint64_t page, const uint8_t* bytes);
  // Whether `page` is a stable mapping's page that is not the file's and has no copy yet: what
  // a sampler should be asked to copy once.
  bool WantsCopy(uint64_t page);
  // Reads the maps again when the last read is older than `max_age_ns`; true when a stable
  // mapping changed or went away since (what an emulator kept of stable pages must then go).
  bool Refresh(uint64_t now_ns, uint64_t max_age_ns);

  struct Stats {
    uint64_t maps_reads = 0;
    uint64_t file_pages = 0;       // stable pages read from their files
    uint64_t vdso_pages = 0;       // ... from this process's vdso
    uint64_t written_pages = 0;    // stable mappings' pages that are not the file's
    uint64_t unreadable = 0;       // files that could not be opened or read
    uint64_t adopted = 0;          // written pages kept from samples' copies
    uint64_t adopted_dropped = 0;  // ... dropped (their mapping changed, or kMaxAdopted)
  };
  const Stats& stats() const { return stats_; }

  static constexpr uint64_t kMissRefreshNs = 100'000'000;
  static constexpr size_t kMaxOpenFiles = 64;  // then every one is closed and reopened on use
  static constexpr size_t kMaxAdopted = 1024;  // 4 MiB of written stable pages per process

 private:
  const decoders::Mapping* Find(uint64_t page, bool* stable);
  void ReadMaps(uint64_t now_ns);
  // Whether the process's page is anonymous (present and not a page of a file): -1 unknown.
  int Anonymous(uint64_t page);
  int FileFor(const decoders::Mapping& m);

  pid_t pid_;
  std::optional<decoders::FileCredentials> open_as_;
  decoders::AddressSpace space_;
  std::vector<bool> stable_;
  uint64_t read_at_ns_ = 0;
  int pagemap_fd_ = -1;
  bool pagemap_tried_ = false;
  std::map<std::pair<uint64_t, uint64_t>, decoders::UniqueFd> files_;  // (device, inode)
  std::map<uint64_t, std::vector<uint8_t>> adopted_;                   // by page
  Stats stats_;
};

}  // namespace pathprof::collectors
