// Bursty sampling ([HPS 2005] §4.1-4.2, see docs/references.md): a sample counter and a burst
// counter that count procedure calls and back-edges, switching profiling on for bursts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::hwmodel {

// Counting semantics (a tick is a call, direct or indirect, or a taken backward branch, to <=
// from):
//  - Off: each tick decrements the sample counter. The tick that brings it to zero is the last
//    unprofiled event; the window starts with the next event. With sample_interval 0 a window
//    starts right after the previous one ends.
//  - On: every event is in the window; each tick decrements the burst counter, and the tick that
//    brings it to zero is the window's last event. Both counters then reload.
// So the pattern repeats every sample_interval + burst_length ticks. ([HPS 2005] writes the
// back-edge test as PC < Target; we use the backward test of the path profiler, to <= from.)
struct BurstyConfig {
  uint64_t sample_interval = 10000;
  uint64_t burst_length = 100;  // >= 1

  Status Validate() const;
  // Ticks of the stream per profiled tick: (sample_interval + burst_length) / burst_length.
  double SamplingPeriod() const {
    return static_cast<double>(sample_interval + burst_length) / static_cast<double>(burst_length);
  }
};

inline bool IsBurstyTick(const BranchEvent& e) {
  return IsCall(e.kind) || e.IsBackward();
}

struct BurstyDecision {
  bool sampled = false;        // the event is inside a window
  bool starts_window = false;  // first event of a window
  bool ends_window = false;    // last event of a window
};

struct BurstyStats {
  uint64_t events = 0;
  uint64_t ticks = 0;
  uint64_t sampled_events = 0;
  uint64_t windows = 0;      // windows started
  uint64_t windows_cut = 0;  // windows split by a gap in the input (each part is a window)
};

// Half-open range [begin, end) of event indices.
struct EventRange {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const EventRange&) const = default;
};

class BurstyController {
 public:
  static Result<BurstyController> Create(const BurstyConfig& config);

  const BurstyConfig& config() const { return config_; }
  const BurstyStats& stats() const { return stats_; }
  bool sampling() const { return on_; }

  // Advances the counters over one event and says whether it is profiled.
  BurstyDecision Observe(const BranchEvent& e);

  // Index ranges of the windows within `events` (continuing the counters' state). A window still
  // open at the end is closed there.
  std::vector<EventRange> WindowRanges(std::span<const BranchEvent> events);

  // Appends the windows of `batch` to `out` as batches with window = true. A batch that starts
  // a window has gap_before = true; one continuing a window left open by the previous input
  // batch has gap_before = false. A gap in `batch` ends any open window (stats().windows_cut);
  // the following sampled events start a new window.
  void Apply(const BranchBatch& batch, std::vector<BranchBatch>* out);

 private:
  explicit BurstyController(const BurstyConfig& config);

  BurstyConfig config_;
  bool on_ = false;
  bool window_open_ = false;  // for Apply: an output batch is open
  uint64_t skip_left_ = 0;
  uint64_t burst_left_ = 0;
  BurstyStats stats_;
};

}  // namespace pathprof::hwmodel
