#include "window_timer.h"

#include <algorithm>
#include <cmath>

namespace pathprof::decoders {

TimedRuns::Run TimedRuns::Add(std::span<const DataflowOp> ops) {
  Run run{static_cast<uint32_t>(ops_.size()), static_cast<uint32_t>(ops.size())};
  for (const DataflowOp& op : ops) {
    TimedOp t;
    t.latency = op.latency;
    t.load_latency = op.load_latency;
    t.dispatch = op.dispatch;
    t.unit = op.unit;
    t.memory_accesses = static_cast<uint8_t>(op.loads + op.stores);
    t.load_slot = op.load_slot;
    t.store_slot = op.store_slot;
    t.occupancy = op.occupancy;
    t.first_slot = static_cast<uint32_t>(slots_.size());
    t.inputs = op.inputs.count;
    t.address_inputs = op.address_inputs.count;
    t.outputs = op.outputs.count;
    slots_.insert(slots_.end(), op.inputs.begin(), op.inputs.end());
    slots_.insert(slots_.end(), op.address_inputs.begin(), op.address_inputs.end());
    slots_.insert(slots_.end(), op.outputs.begin(), op.outputs.end());
    ops_.push_back(t);
  }
  return run;
}

void TimedRuns::Clear() {
  ops_ = {};  // their memory too: the cache's bound is on what it holds
  slots_ = {};
}

namespace {

// 1 / UnitsPerCycle, per unit (0 for kNone, which takes no unit's time).
const std::array<double, static_cast<size_t>(Unit::kCount)> kCyclesPerWork = [] {
  std::array<double, static_cast<size_t>(Unit::kCount)> a{};
  for (size_t u = 1; u < a.size(); ++u) a[u] = 1.0 / UnitsPerCycle(static_cast<Unit>(u));
  return a;
}();

}  // namespace

void WindowTimer::Start() {
  ready_.fill(0);
  work_.fill(0);
  memory_work_ = integer_work_ = busiest_ = dispatched_ = finished_ = 0;
}

double WindowTimer::Add(TimedRuns::Run run, bool ends_taken) {
  const double before = finished_;
  // Memory slots name the stores of one run (BlockDataflow::LinkStoresToLoads): a load of
  // another run reads the cache.
  std::array<bool, kMaxMemorySlots> stored{};
  std::fill(ready_.begin() + kFirstMemorySlot, ready_.end(), 0.0);
  const uint16_t* slots = runs_.slots();
  for (const TimedOp& op : runs_.Ops(run)) {
    double start = dispatched_;
    dispatched_ += op.dispatch / kDispatchWidth;
    const uint16_t* s = slots + op.first_slot;
    for (int i = 0; i < op.inputs; ++i) start = std::max(start, ready_[*s++]);
    double address = dispatched_;
    for (int i = 0; i < op.address_inputs; ++i) address = std::max(address, ready_[*s++]);
    if (op.load_latency > 0) {
      double value = address + op.load_latency;
      // Read back from the run's own store: renamed to the stored value (loop_cycles.cc).
      if (op.load_slot >= 0 && stored[op.load_slot - kFirstMemorySlot])
        value = std::max(address, ready_[op.load_slot] + kForwardingLatency);
      start = std::max(start, value);
    }
    const double done = start + op.latency;
    for (int i = 0; i < op.outputs; ++i) ready_[*s++] = done;
    if (op.store_slot >= 0) {
      ready_[op.store_slot] = done;
      stored[op.store_slot - kFirstMemorySlot] = true;
    }
    finished_ = std::max(finished_, done);
    // No faster than the busiest unit over the window so far.
    if (op.unit != Unit::kNone) {
      const size_t u = static_cast<size_t>(op.unit);
      work_[u] += op.occupancy;
      busiest_ = std::max(busiest_, work_[u] * kCyclesPerWork[u]);
      if (op.unit == Unit::kAlu || op.unit == Unit::kMultiplier) {
        integer_work_ += op.occupancy;
        busiest_ = std::max(busiest_, integer_work_ / kIntegerPipes);
      }
    }
    if (op.memory_accesses > 0) {
      memory_work_ += op.memory_accesses;
      busiest_ = std::max(busiest_, memory_work_ / kMemoryPipes);
    }
  }
  // A taken branch ends its fetch cycle: the next run dispatches from the next one.
  if (ends_taken) dispatched_ = std::ceil(dispatched_ - 1e-9);
  dispatched_ = std::max(dispatched_, busiest_);
  finished_ = std::max(finished_, dispatched_);
  return finished_ - before;
}

}  // namespace pathprof::decoders
