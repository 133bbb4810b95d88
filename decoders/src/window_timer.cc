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
    t.loads = op.loads;
    t.stores = op.stores;
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

void WindowTimer::Start() {
  ready_.fill(0);
  units_ = {};
  dispatched_ = finished_ = 0;
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
    units_.Add(op.unit, op.occupancy, op.loads, op.stores);
  }
  // A taken branch ends its fetch cycle: the next run dispatches from the next one.
  if (ends_taken) dispatched_ = std::ceil(dispatched_ - 1e-9);
  dispatched_ = std::max(dispatched_, units_.cycles());
  finished_ = std::max(finished_, dispatched_);
  return finished_ - before;
}

}  // namespace pathprof::decoders
