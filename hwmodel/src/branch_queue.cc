#include "pathprof/hwmodel/branch_queue.h"

#include <algorithm>
#include <bit>

#include "pathprof/hwmodel/path_stack.h"

namespace pathprof::hwmodel {

ProfilerLatencies ProfilerLatencies::FromHpt(const HotPathTableConfig& hpt) {
  ProfilerLatencies l;
  l.hpt_miss = std::max<uint32_t>(1, static_cast<uint32_t>(std::bit_width(hpt.ways) - 1));
  return l;
}

uint32_t ProfilerLatencies::ServiceCycles(uint8_t ops, uint32_t hpt_hits,
                                          uint32_t hpt_misses) const {
  uint32_t cycles = 0;
  if (ops & kOpUpdate) cycles += update;
  if (ops & kOpUpdateCount) cycles += update_count;
  if (ops & kOpPop) cycles += pop;
  if (ops & kOpPush) cycles += push;
  return cycles + hpt_hits * hpt_hit + hpt_misses * hpt_miss;
}

Result<BranchQueueModel> BranchQueueModel::Create(uint32_t capacity) {
  if (capacity < 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "branch queue: capacity must be at least 1 (the entry being processed)");
  }
  return BranchQueueModel(capacity);
}

uint64_t BranchQueueModel::Add(uint64_t gap_cycles, uint64_t service_cycles) {
  const uint64_t nominal = last_retire_ + gap_cycles;
  uint64_t retire = nominal;
  if (finish_times_.size() == capacity_) {
    // Full: the branch waits in commit until the oldest queued branch has been processed.
    retire = std::max(retire, finish_times_.front());
    finish_times_.pop_front();
  }
  const uint64_t stall = retire - nominal;
  const uint64_t start = std::max(retire, last_finish_);
  last_finish_ = start + service_cycles;
  finish_times_.push_back(last_finish_);
  last_retire_ = retire;
  branches_ += 1;
  stall_cycles_ += stall;
  base_cycles_ += gap_cycles;
  busy_cycles_ += service_cycles;
  return stall;
}

double BranchQueueModel::OverheadPercent() const {
  if (base_cycles_ == 0) return 0;
  return 100.0 * static_cast<double>(stall_cycles_) / static_cast<double>(base_cycles_);
}

Result<BranchQueueReport> SimulateBranchQueue(std::span<const BranchEvent> events,
                                              const PathStackConfig& stack_config,
                                              const HotPathTableConfig& hpt_config,
                                              const BranchQueueSimConfig& sim) {
  PATHPROF_ASSIGN_OR_RETURN(auto stack, PathStack::Create(stack_config));
  PATHPROF_ASSIGN_OR_RETURN(auto hpt, HotPathTable::Create(hpt_config));
  PATHPROF_ASSIGN_OR_RETURN(auto model, BranchQueueModel::Create(sim.queue_size));
  ProfilerLatencies lat = sim.latencies;
  if (sim.latencies_from_hpt) lat.hpt_miss = ProfilerLatencies::FromHpt(hpt_config).hpt_miss;

  BranchQueueReport report;
  for (const BranchEvent& e : events) {
    uint32_t hits = 0, misses = 0;
    const uint8_t ops = stack.Process(e, [&](const CompletedPath& c) {
      if (hpt.Record(c)) {
        hits += 1;
      } else {
        misses += 1;
      }
    });
    report.paths += hits + misses;
    const uint64_t gap =
        sim.use_event_cycles && e.cycles > 0 ? e.cycles : uint64_t{sim.cycles_per_branch};
    model.Add(gap, lat.ServiceCycles(ops, hits, misses));
  }
  report.branches = model.branches();
  report.base_cycles = model.base_cycles();
  report.busy_cycles = model.busy_cycles();
  report.stall_cycles = model.stall_cycles();
  report.overhead_percent = model.OverheadPercent();
  report.hpt = hpt.stats();
  return report;
}

}  // namespace pathprof::hwmodel
