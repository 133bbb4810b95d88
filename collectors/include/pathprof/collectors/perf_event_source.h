// Live perf_event sources for branch traces: LBR (PERF_SAMPLE_BRANCH_STACK samples) and Intel
// PT (the intel_pt PMU with an AUX area). Both hand out raw perf records (the same layout as a
// perf.data file's data section, parsed by decoders/) and, for PT, raw AUX bytes.
// Neither runs on a host without a PMU; Open() then says why (see capabilities.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pathprof/collectors/perf_ring.h"
#include "pathprof/core/status.h"

namespace pathprof::collectors {

struct PerfLbrConfig {
  pid_t pid = -1;                   // a task (all its threads via inherit), or -1 with cpu >= 0
  int cpu = -1;                     // -1: follow the task on any CPU
  uint64_t sample_period = 100003;  // taken branches (cycles) between samples
  bool user_only = true;
  bool call_stack_mode =
      false;            // PERF_SAMPLE_BRANCH_CALL_STACK: a call stack, not a branch sequence
  int data_pages = 64;  // power of two
};

struct PerfPtConfig {
  pid_t pid = -1;
  int cpu = -1;
  bool snapshot = false;  // AUX in overwrite mode: read on demand (bursty snapshots)
  bool user_only = true;
  int data_pages = 16;          // sideband records (MMAP2, ITRACE_START, AUX, SWITCH)
  int aux_pages = 1024;         // power of two: 4 MiB of trace
  bool start_disabled = false;  // for bursty enable/disable
};

// The perf_event_attr each source uses; exposed so the decoder can be configured from the same
// values and so tests can check them without a PMU.
struct PerfAttrBytes {
  std::vector<uint8_t> bytes;  // a struct perf_event_attr
};
PerfAttrBytes LbrAttr(const PerfLbrConfig& config);
Result<PerfAttrBytes> PtAttr(const PerfPtConfig& config, const std::string& sysfs_root = "/sys");

class PerfEventSource {
 public:
  static Result<std::unique_ptr<PerfEventSource>> OpenLbr(const PerfLbrConfig& config);
  static Result<std::unique_ptr<PerfEventSource>> OpenPt(const PerfPtConfig& config);
  ~PerfEventSource();
  PerfEventSource(const PerfEventSource&) = delete;
  PerfEventSource& operator=(const PerfEventSource&) = delete;

  int fd() const { return fd_; }  // pollable: readable when records are waiting
  Status Enable();
  Status Disable();
  PerfRing& ring() { return *ring_; }
  const std::vector<uint8_t>& attr() const { return attr_; }

 private:
  PerfEventSource() = default;
  static Result<std::unique_ptr<PerfEventSource>> Open(std::vector<uint8_t> attr, pid_t pid,
                                                       int cpu, int data_pages, int aux_pages,
                                                       bool aux_overwrite, const char* what);
  int fd_ = -1;
  void* base_ = nullptr;
  size_t base_size_ = 0;
  void* aux_ = nullptr;
  size_t aux_size_ = 0;
  std::vector<uint8_t> attr_;
  std::unique_ptr<PerfRing> ring_;
};

}  // namespace pathprof::collectors
