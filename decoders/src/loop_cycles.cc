#include "loop_cycles.h"

#include <algorithm>
#include <array>

#include "unit_work.h"

namespace pathprof::decoders {
namespace {

// Dataflow with unlimited units: how much later each iteration finishes than the one before,
// once the first iterations' start-up has passed. Chains that span several iterations (a value
// handed around through two registers) repeat with a period of at most a few iterations, so
// the mean over the last kMeasured iterations is their latency per iteration.
constexpr int kWarmUp = 8, kMeasured = 8;

double Recurrence(std::span<const DataflowOp> ops) {
  std::array<double, kSlotCount> ready{};  // when each register, flag group or stored value is
  std::array<bool, kSlotCount> stored{};   // memory slots: written by some earlier store yet
  double finished_before = 0, finished = 0;
  for (int iteration = 0; iteration < kWarmUp + kMeasured; ++iteration) {
    if (iteration == kWarmUp) finished_before = finished;
    for (const DataflowOp& op : ops) {
      double start = 0;
      for (uint16_t s : op.inputs) start = std::max(start, ready[s]);
      if (op.load_latency > 0) {
        double address = 0;
        for (uint16_t s : op.address_inputs) address = std::max(address, ready[s]);
        double value = address + op.load_latency;
        // Read back from a store of the block: renamed to the store's data, so it waits for
        // that (possibly from the previous iteration) rather than for the cache.
        if (op.load_slot >= 0 && stored[op.load_slot])
          value = ready[op.load_slot] + kForwardingLatency;
        start = std::max(start, value);
      }
      const double done = start + op.latency;
      for (uint16_t s : op.outputs) ready[s] = done;
      if (op.store_slot >= 0) {
        ready[op.store_slot] = done;
        stored[op.store_slot] = true;
      }
      finished = std::max(finished, done);
    }
  }
  return (finished - finished_before) / kMeasured;
}

}  // namespace

LoopCycles TimeLoop(std::span<const DataflowOp> ops, bool loops_back) {
  LoopCycles c;
  if (ops.empty()) return c;
  c.recurrence = Recurrence(ops);
  double dispatch = 0;
  UnitWork work;
  for (const DataflowOp& op : ops) {
    dispatch += op.dispatch;
    work.Add(op.unit, op.occupancy, op.loads, op.stores);
    c.through_memory |= op.load_slot >= 0;
  }
  c.front_end = std::max(dispatch / kDispatchWidth, loops_back ? 1 / kTakenBranchesPerCycle : 0);
  c.units = work.cycles();
  c.busiest = work.busiest();
  c.cycles = std::max({c.recurrence, c.front_end, c.units});
  return c;
}

}  // namespace pathprof::decoders
