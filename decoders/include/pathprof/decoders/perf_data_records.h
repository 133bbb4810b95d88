// The typed records a perf.data file holds, as the reader hands them out.
// Byte spans (raw data, AUX bytes, user stacks) point into the reader's input and stay valid as
// long as the reader lives; everything else is copied out.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "pathprof/decoders/perf_data_format.h"

namespace pathprof::decoders {

// perf_event_attr, every ABI version widened to the newest; fields a shorter attr lacks are 0.
struct PerfEventAttr {
  uint32_t type = 0;
  uint32_t size = 0;  // as stored; 0 in very old files means kAttrSizeVer0
  uint64_t config = 0;
  uint64_t sample_period = 0;  // or sample_freq when freq()
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t flags = 0;  // the bitfield word: disabled, inherit, ..., sample_id_all, ...
  uint32_t wakeup_events = 0;
  uint32_t bp_type = 0;
  uint64_t config1 = 0;
  uint64_t config2 = 0;
  uint64_t branch_sample_type = 0;
  uint64_t sample_regs_user = 0;
  uint32_t sample_stack_user = 0;
  int32_t clockid = 0;
  uint64_t sample_regs_intr = 0;
  uint32_t aux_watermark = 0;
  uint16_t sample_max_stack = 0;
  uint32_t aux_sample_size = 0;

  bool Flag(int bit) const { return (flags >> bit) & 1; }
  bool sample_id_all() const { return Flag(perf::kAttrSampleIdAll); }
  bool freq() const { return Flag(perf::kAttrFreq); }
  bool exclude_kernel() const { return Flag(perf::kAttrExcludeKernel); }
  bool exclude_user() const { return Flag(perf::kAttrExcludeUser); }
  unsigned precise_ip() const { return (flags >> 15) & 3; }
  bool branch_hw_index() const { return branch_sample_type & perf::kBranchHwIndex; }
  bool operator==(const PerfEventAttr&) const = default;
};

// One event of the recording: its attr and the sample ids the kernel gave its instances.
struct PerfAttr {
  PerfEventAttr attr;
  std::vector<uint64_t> ids;
  bool operator==(const PerfAttr&) const = default;
};

// The sample_id_all trailer of non-sample records; `present` holds the sample_type bits that
// were there (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER).
struct PerfSampleId {
  uint64_t present = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  bool operator==(const PerfSampleId&) const = default;
};

// perf_branch_entry. `flags` is the raw third word; the accessors decode its bitfield.
struct PerfBranchEntry {
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t flags = 0;

  bool mispredicted() const { return flags & 1; }
  bool predicted() const { return (flags >> 1) & 1; }
  bool in_tx() const { return (flags >> 2) & 1; }
  bool abort() const { return (flags >> 3) & 1; }
  uint16_t cycles() const { return static_cast<uint16_t>(flags >> 4); }
  uint8_t type() const { return (flags >> 20) & 0xf; }
  uint8_t spec() const { return (flags >> 24) & 0x3; }
  uint8_t new_type() const { return (flags >> 26) & 0xf; }
  uint8_t priv() const { return (flags >> 30) & 0x7; }

  static uint64_t MakeFlags(bool mispredicted, bool predicted, uint16_t cycles, uint8_t type = 0) {
    return uint64_t{mispredicted} | uint64_t{predicted} << 1 | uint64_t{cycles} << 4 |
           uint64_t{type & 0xfu} << 20;
  }
  bool operator==(const PerfBranchEntry&) const = default;
};

// PERF_RECORD_SAMPLE. Only the fields named in `sample_type` are meaningful.
struct PerfSample {
  size_t attr_index = 0;  // into PerfDataInfo::attrs
  uint64_t sample_type = 0;
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  std::span<const uint8_t> read_values;  // the READ block, raw
  std::vector<uint64_t> callchain;
  std::span<const uint8_t> raw;
  bool has_branch_hw_index = false;
  uint64_t branch_hw_index = 0;
  std::vector<PerfBranchEntry> branches;  // newest first, as the hardware reports them
  uint64_t regs_user_abi = 0;
  std::vector<uint64_t> regs_user;
  std::span<const uint8_t> stack_user;
  uint64_t stack_user_dyn_size = 0;
  uint64_t weight = 0;
  uint64_t data_src = 0;
  uint64_t transaction = 0;
  uint64_t regs_intr_abi = 0;
  std::vector<uint64_t> regs_intr;
  uint64_t phys_addr = 0;
  uint64_t cgroup = 0;
  uint64_t data_page_size = 0;
  uint64_t code_page_size = 0;
  std::span<const uint8_t> aux;
};

// MMAP and MMAP2 (is_mmap2). MMAP2 carries either device/inode or (misc kMiscMmapBuildId) a
// build-id.
struct PerfMmap {
  bool is_mmap2 = false;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t ino_generation = 0;
  std::string build_id;  // raw bytes; empty unless MMAP2 with a build-id
  uint32_t prot = 0;
  uint32_t flags = 0;
  std::string filename;
  PerfSampleId sample_id;
};

struct PerfComm {
  uint32_t pid = 0;
  uint32_t tid = 0;
  bool exec = false;
  std::string comm;
  PerfSampleId sample_id;
};

// FORK and EXIT (is_exit).
struct PerfForkExit {
  bool is_exit = false;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  uint32_t ptid = 0;
  uint64_t time = 0;
  PerfSampleId sample_id;
};

// SWITCH and SWITCH_CPU_WIDE (cpu_wide: next_prev_* name the other task).
struct PerfSwitch {
  bool cpu_wide = false;
  bool out = false;
  bool preempt = false;
  uint32_t next_prev_pid = 0;
  uint32_t next_prev_tid = 0;
  PerfSampleId sample_id;
};

struct PerfLost {
  uint64_t id = 0;
  uint64_t lost = 0;
  PerfSampleId sample_id;
};

struct PerfLostSamples {
  uint64_t lost = 0;
  PerfSampleId sample_id;
};

// The kernel wrote AUX data (flags: 1 truncated, 2 overwrite, 4 partial, 8 collision).
struct PerfAux {
  uint64_t aux_offset = 0;
  uint64_t aux_size = 0;
  uint64_t flags = 0;
  PerfSampleId sample_id;
};

// AUXTRACE: a buffer of AUX-area bytes (e.g. Intel PT packets) that follows the record.
struct PerfAuxtrace {
  uint64_t size = 0;
  uint64_t offset = 0;  // in the AUX area
  uint64_t reference = 0;
  uint32_t idx = 0;
  uint32_t tid = 0;
  uint32_t cpu = 0;
  std::span<const uint8_t> data;
};

// AUXTRACE_INFO: the PMU type and its private settings (for intel_pt: pmu type, time shift/mult/
// zero, cap_user_time_zero, tsc_bit, noretcomp_bit, have_sched_switch, snapshot_mode,
// per_cpu_mmaps, mtc_bit, mtc_freq_bits, tsc_ctc_ratio_n/d, cyc_bit, ...).
struct PerfAuxtraceInfo {
  uint32_t type = 0;
  std::vector<uint64_t> priv;
};

struct PerfItraceStart {
  uint32_t pid = 0;
  uint32_t tid = 0;
  PerfSampleId sample_id;
};

// THROTTLE and UNTHROTTLE.
struct PerfThrottle {
  bool unthrottle = false;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  PerfSampleId sample_id;
};

struct PerfFinishedRound {};

struct PerfIdIndex {
  struct Entry {
    uint64_t id = 0;
    uint64_t idx = 0;
    uint64_t cpu = 0;
    uint64_t tid = 0;
  };
  std::vector<Entry> entries;
};

struct PerfTimeConv {
  uint64_t time_shift = 0;
  uint64_t time_mult = 0;
  uint64_t time_zero = 0;
  bool has_cycles = false;  // newer perf adds time_cycles, time_mask and the caps
  uint64_t time_cycles = 0;
  uint64_t time_mask = 0;
  bool cap_user_time_zero = false;
  bool cap_user_time_short = false;
};

// HEADER_ATTR (pipe mode): an event's attr and ids. The reader also adds it to its attrs.
struct PerfHeaderAttr {
  PerfAttr attr;
};

// HEADER_FEATURE (pipe mode): one header feature section; the reader also applies it.
struct PerfHeaderFeature {
  uint64_t feature = 0;
  std::span<const uint8_t> data;
};

// One entry of the build-id table (HEADER_BUILD_ID record or BUILD_ID feature).
struct PerfBuildId {
  int32_t pid = 0;
  uint16_t misc = 0;
  std::string build_id;  // raw bytes
  std::string filename;
};

// A record of a known type this reader does not decode (READ, NAMESPACES, KSYMBOL, tracing
// data, COMPRESSED, ...) or of an unknown type: its bytes after the header.
struct PerfOtherRecord {
  bool known_type = false;
  std::span<const uint8_t> payload;
};

using PerfRecordBody =
    std::variant<PerfSample, PerfMmap, PerfComm, PerfForkExit, PerfSwitch, PerfLost,
                 PerfLostSamples, PerfAux, PerfAuxtrace, PerfAuxtraceInfo, PerfItraceStart,
                 PerfThrottle, PerfFinishedRound, PerfIdIndex, PerfTimeConv, PerfHeaderAttr,
                 PerfHeaderFeature, PerfBuildId, PerfOtherRecord>;

struct PerfRecord {
  uint64_t offset = 0;  // of the record header in the input
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;  // header.size (AUXTRACE and tracing data have bytes beyond it)
  PerfRecordBody body;
};

}  // namespace pathprof::decoders
