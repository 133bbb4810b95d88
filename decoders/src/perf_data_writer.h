// Writes perf.data files (file mode) holding LBR samples, so that exact branch streams can be
// replayed through the same path as real `perf record -b` recordings, and checked by `perf`.
//
// The file has one event, cycles:u with sample_type IP|TID|TIME|PERIOD|BRANCH_STACK and
// branch_sample_type ANY|USER, sample_id_all set; MMAP2 and COMM side-band; and the ARCH,
// NRCPUS and CMDLINE header features.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_records.h"

namespace pathprof::decoders {

struct PerfDataWriterOptions {
  std::string arch = "x86_64";
  std::vector<std::string> cmdline = {"pathprof", "synthesized-lbr"};
  uint64_t sample_period = 1000;  // attr.sample_period (informational; samples carry their own)
  uint64_t sample_id = 1;         // the event's id
};

// An executable mapping, written as MMAP2 (with a build-id when one is given).
struct PerfImage {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 5;   // PROT_READ | PROT_EXEC
  uint32_t flags = 2;  // MAP_PRIVATE
  std::string path;
  std::string build_id;  // raw bytes, at most 20
  uint64_t time = 0;
};

struct PerfLbrSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t ip = 0;
  uint64_t period = 0;
  std::vector<PerfBranchEntry> branches;  // newest first, as the hardware reports them
  bool operator==(const PerfLbrSample&) const = default;
};

// The most entries one sample record can hold (its size is a 16-bit field).
inline constexpr size_t kMaxLbrEntriesPerRecord = (65535 - 48) / 24;

class PerfDataWriter {
 public:
  static Result<PerfDataWriter> Create(const std::string& path, PerfDataWriterOptions options = {});
  PerfDataWriter(PerfDataWriter&&) noexcept;
  PerfDataWriter& operator=(PerfDataWriter&&) noexcept;
  ~PerfDataWriter();

  Status WriteComm(uint32_t pid, uint32_t tid, std::string_view comm, uint64_t time = 0);
  Status WriteMmap2(const PerfImage& image);
  Status WriteSample(const PerfLbrSample& sample);
  // Writes the feature sections and the final header. A file not closed has no header.
  Status Close();

  uint64_t samples_written() const { return samples_; }

 private:
  PerfDataWriter(std::FILE* f, std::string path, PerfDataWriterOptions options);
  Status Append(const std::vector<uint8_t>& record);
  Status WriteAt(uint64_t offset, const std::vector<uint8_t>& bytes);

  std::FILE* file_ = nullptr;
  std::string path_;
  PerfDataWriterOptions options_;
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;
  uint64_t samples_ = 0;
  std::map<std::string, std::string> build_ids_;  // path -> raw build-id, for HEADER_BUILD_ID
};

struct LbrSynthOptions {
  uint32_t entries = 32;   // LBR depth W
  uint64_t period = 1000;  // one sample every `period` taken branches of a thread
};

// Turns taken-branch streams into LBR samples the way the hardware would have recorded them:
// each thread counts its taken branches, and every `period`-th one triggers a sample holding
// that thread's last W taken branches (newest first). A batch with gap_before clears the
// thread's history (the kernel flushes LBR on a context switch), so a sample soon after a gap
// can hold fewer than W entries. Not-taken events are skipped. A window batch (ptrace bursts,
// LBR) becomes one sample of its own last W taken branches.
class LbrSampleSynthesizer {
 public:
  explicit LbrSampleSynthesizer(LbrSynthOptions options) : options_(options) {}
  void Add(const BranchBatch& batch, std::vector<PerfLbrSample>* out);
  uint64_t taken_branches() const { return taken_; }
  uint64_t windows() const { return windows_; }

 private:
  void AddWindow(const BranchBatch& batch, size_t w, std::vector<PerfLbrSample>* out);
  struct Thread {
    std::vector<BranchEvent> ring;  // circular, capacity options_.entries
    size_t next = 0;
    size_t filled = 0;
    uint64_t since_sample = 0;
  };
  LbrSynthOptions options_;
  std::unordered_map<uint32_t, Thread> threads_;
  uint64_t taken_ = 0;
  uint64_t windows_ = 0;
};

// A .pbs stream's images and batches as a perf.data with LBR samples: one COMM per thread,
// one MMAP2 per image, then the samples LbrSampleSynthesizer draws from the batches.
Status WriteLbrPerfData(const std::string& path, const PbsContents& pbs, const LbrSynthOptions& lbr,
                        PerfDataWriterOptions options = {});

}  // namespace pathprof::decoders
