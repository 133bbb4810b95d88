// The perf_event mmap ring buffer: the data area (records) and, for Intel PT, the AUX area.
// Works on any memory laid out like the kernel's (a perf_event_mmap_page followed by 2^n data
// pages), so the wrap-around and tail handling are tested here without a PMU.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::collectors {

struct PerfRingStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t malformed = 0;  // a header with a size that cannot be right: the rest is skipped
  uint64_t aux_bytes = 0;
};

class PerfRing {
 public:
  // `base` points at the perf_event_mmap_page; `data_size` is a power of two. `aux`/`aux_size`
  // describe the AUX area (nullptr/0 when there is none).
  PerfRing(void* base, size_t data_size, void* aux = nullptr, size_t aux_size = 0);

  using RecordSink = std::function<void(std::span<const uint8_t> record)>;
  // Hands every complete record between data_tail and data_head to `sink` (contiguous even
  // when it wraps), then advances data_tail so the kernel can reuse the space.
  Status ReadRecords(const RecordSink& sink);

  using AuxSink =
      std::function<void(std::span<const uint8_t> first, std::span<const uint8_t> second)>;
  // Hands the new AUX bytes (up to two spans when they wrap) and advances aux_tail.
  Status ReadAux(const AuxSink& sink);

  const PerfRingStats& stats() const { return stats_; }

 private:
  perf_event_mmap_page* page_;
  uint8_t* data_;
  size_t data_size_;
  uint8_t* aux_;
  size_t aux_size_;
  std::vector<uint8_t> scratch_;
  PerfRingStats stats_;
};

}  // namespace pathprof::collectors
