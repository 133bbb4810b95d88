// The branch queue between the commit stage and the path profiler, and the cost model of
// thesis ch. 5.5.3: how many commit cycles the profiler steals for a given queue size.
#pragma once

#include <cstdint>
#include <deque>
#include <span>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/hot_path_table.h"
#include "pathprof/hwmodel/operation_table.h"

namespace pathprof::hwmodel {

// Latencies of ch. 5.5.3: push, update and update-count take one cycle each; a pop takes one
// cycle plus the HPT update (hit: hpt_hit_cycles; miss: log2(ways) by default, the LFU search).
struct ProfilerLatencies {
  uint32_t push = 1;
  uint32_t update = 1;
  uint32_t update_count = 1;
  uint32_t pop = 1;
  uint32_t hpt_hit = 1;
  uint32_t hpt_miss = 2;  // set by FromHpt to log2(ways) (at least 1)

  static ProfilerLatencies FromHpt(const HotPathTableConfig& hpt);
  // Cycles to process one branch: ops are Op bits as PathStack::Process returns them; each
  // popped path that reached the HPT adds its hit or miss latency.
  uint32_t ServiceCycles(uint8_t ops, uint32_t hpt_hits, uint32_t hpt_misses) const;
};

// Queue timing. The queue holds `capacity` branches, the one being processed included: branch
// i may retire only once branch i - capacity has been fully processed; otherwise commit stalls.
// Without stalls branch i retires `gap` cycles after branch i-1; a stall delays every later
// retirement by the same amount.
class BranchQueueModel {
 public:
  static Result<BranchQueueModel> Create(uint32_t capacity);

  // Adds the next retiring branch: `gap_cycles` after the previous retirement in an unstalled
  // pipeline, needing `service_cycles` of profiler time. Returns the stall it caused.
  uint64_t Add(uint64_t gap_cycles, uint64_t service_cycles);

  uint64_t branches() const { return branches_; }
  uint64_t stall_cycles() const { return stall_cycles_; }
  uint64_t base_cycles() const { return base_cycles_; }  // sum of gaps: unprofiled run time
  uint64_t busy_cycles() const { return busy_cycles_; }  // sum of service times
  // stall / base, in percent (0 when nothing was added).
  double OverheadPercent() const;

 private:
  explicit BranchQueueModel(uint32_t capacity) : capacity_(capacity) {}

  uint32_t capacity_;
  uint64_t branches_ = 0;
  uint64_t stall_cycles_ = 0;
  uint64_t base_cycles_ = 0;
  uint64_t busy_cycles_ = 0;
  uint64_t last_retire_ = 0;
  uint64_t last_finish_ = 0;
  std::deque<uint64_t> finish_times_;  // of the last `capacity` branches
};

struct BranchQueueSimConfig {
  uint32_t queue_size = 4;
  // Unstalled cycles between consecutive retiring branches, unless use_event_cycles and the
  // event carries cycles (LBR), in which case that value (at least 1) is used.
  uint32_t cycles_per_branch = 5;
  bool use_event_cycles = false;
  ProfilerLatencies latencies;  // hpt_miss is overridden from the HPT config unless kept
  bool latencies_from_hpt = true;
};

struct BranchQueueReport {
  uint64_t branches = 0;
  uint64_t paths = 0;
  uint64_t base_cycles = 0;
  uint64_t busy_cycles = 0;
  uint64_t stall_cycles = 0;
  double overhead_percent = 0;
  HotPathTableStats hpt;
};

// Runs the path stack and an HPT over `events` (one thread, one reset at the start) and times
// them through the queue model.
Result<BranchQueueReport> SimulateBranchQueue(std::span<const BranchEvent> events,
                                              const PathStackConfig& stack,
                                              const HotPathTableConfig& hpt,
                                              const BranchQueueSimConfig& sim);

}  // namespace pathprof::hwmodel
