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

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/mapped_file.h"
#include "process_access.h"

namespace pathprof::collectors {

class ProcessImage {
 public:
  // `access` opens what the image reads (the maps, pagemap, the mapped files: a confined
  // session's requester's rights for those); it must outlive the image.
  ProcessImage(pid_t pid, ProcessAccess& access);
  ~ProcessImage();
  ProcessImage(const ProcessImage&) = delete;
  ProcessImage& operator=(const ProcessImage&) = delete;

  // Reads what every image shares (this process's vdso) now: the emulator helper calls it
  // before its sandbox, which lets it open nothing.
  static void LoadShared();

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

  // Whether the maps as last read are what the process had at a sample. A sample carries the
  // process's mapping sequence (the kernel's mm_lock_seq, which moves at every change of the
  // mappings; RawSnapshot::mapping_sequence); the maps are read at another time. A read
  // describes sequence S when a sample taken before the read began and one taken after it
  // ended both carry S: nothing changed in between. A read that finds the same mappings as
  // the one before it describes what that one did. Every sample of the process is observed
  // (ObserveSequence), in any order; Describes(S) then says whether windows of samples with
  // sequence S may trust what the maps say a page permits.
  void ObserveSequence(uint64_t time_ns, uint32_t sequence);
  bool Describes(uint32_t sequence) const;
  // What a window of `sample` may trust: whether the maps as read are the sample's (always,
  // on a kernel whose samples carry no sequence: see docs/performance.md).
  bool DescribesSample(const RawSnapshot& sample) const;
  // Observes a sample's sequence, then Refresh: with `max_age_ns`, or at most kMissRefreshNs
  // when the maps as read do not describe the sample (the mappings changed since).
  bool RefreshForSample(const RawSnapshot& sample, uint64_t sample_ns, uint64_t now_ns,
                        uint64_t max_age_ns);

  struct Stats {
    uint64_t maps_reads = 0;
    uint64_t file_pages = 0;       // stable pages read from their files
    uint64_t vdso_pages = 0;       // ... from this process's vdso
    uint64_t written_pages = 0;    // stable mappings' pages that are not the file's
    uint64_t unreadable = 0;       // files that could not be opened or read
    uint64_t adopted = 0;          // written pages kept from samples' copies
    uint64_t adopted_dropped = 0;  // ... dropped (their mapping changed, or kMaxAdopted)
    uint64_t maps_changed = 0;     // reads that found other mappings than the read before
  };
  const Stats& stats() const { return stats_; }

  static constexpr uint64_t kMissRefreshNs = 100'000'000;
  static constexpr size_t kMaxOpenFiles = 64;  // then every one is closed and reopened on use
  static constexpr size_t kMaxAdopted = 1024;  // 4 MiB of written stable pages per process
  static constexpr size_t kMaxDescribed = 16;  // sequences one read is known to describe

 private:
  const decoders::Mapping* Find(uint64_t page, bool* stable);
  void ReadMaps(uint64_t now_ns);
  // Whether the process's page is anonymous (present and not a page of a file): -1 unknown.
  int Anonymous(uint64_t page);
  int FileFor(const decoders::Mapping& m);

  pid_t pid_;
  ProcessAccess& access_;
  decoders::AddressSpace space_;
  std::vector<bool> stable_;
  uint64_t read_at_ns_ = 0;
  decoders::UniqueFd pagemap_;
  bool pagemap_tried_ = false;
  std::map<std::pair<uint64_t, uint64_t>, decoders::UniqueFd> files_;  // (device, inode)
  std::map<uint64_t, std::vector<uint8_t>> adopted_;                   // by page
  struct SeenSequence {
    bool seen = false;
    uint64_t time_ns = 0;
    uint32_t sequence = 0;
  };
  // The latest sample observed; of the samples observed since the maps were read, the latest
  // taken before the read began and the earliest taken after it ended.
  SeenSequence last_, before_read_, after_read_;
  uint64_t read_started_ns_ = 0, read_ended_ns_ = 0;
  std::vector<uint32_t> described_;  // sequences the maps as read are known to describe
  Stats stats_;
};

}  // namespace pathprof::collectors
