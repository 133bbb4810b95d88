#include "loop_cycles.h"

#include <algorithm>
#include <array>

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

struct Bound {
  double cycles = 0;
  const char* name = "";
};

Bound BusiestUnit(std::span<const DataflowOp> ops) {
  std::array<double, static_cast<size_t>(Unit::kCount)> busy{};
  double loads = 0, stores = 0, vector_issue = 0;
  for (const DataflowOp& op : ops) {
    busy[static_cast<size_t>(op.unit)] += op.occupancy;
    loads += op.loads;
    stores += op.stores;
    // A divide holds its divider for several cycles but its pipe for one.
    if (op.unit == Unit::kFloatDivider) {
      vector_issue += 1;
    } else if (op.unit == Unit::kVectorAlu || op.unit == Unit::kVectorShuffle ||
               op.unit == Unit::kFloatAdd || op.unit == Unit::kFloatMul) {
      vector_issue += op.occupancy;
    }
  }
  busy[static_cast<size_t>(Unit::kLoad)] += loads;
  busy[static_cast<size_t>(Unit::kStore)] += stores;
  Bound b;
  for (size_t u = 1; u < busy.size(); ++u) {
    const double cycles = busy[u] / UnitsPerCycle(static_cast<Unit>(u));
    if (cycles > b.cycles) b = {cycles, UnitName(static_cast<Unit>(u))};
  }
  // Pipes that several units share.
  const double integer =
      (busy[static_cast<size_t>(Unit::kAlu)] + busy[static_cast<size_t>(Unit::kMultiplier)]) /
      kIntegerPipes;
  if (integer > b.cycles) b = {integer, "integer pipes"};
  const double memory = (loads + stores) / kMemoryPipes;
  if (memory > b.cycles) b = {memory, "address generation"};
  const double vector = vector_issue / kVectorPipes;
  if (vector > b.cycles) b = {vector, "vector pipes"};
  return b;
}

}  // namespace

LoopCycles TimeLoop(std::span<const DataflowOp> ops, bool loops_back) {
  LoopCycles c;
  if (ops.empty()) return c;
  c.recurrence = Recurrence(ops);
  double dispatch = 0;
  for (const DataflowOp& op : ops) dispatch += op.dispatch;
  c.front_end = std::max(dispatch / kDispatchWidth, loops_back ? 1 / kTakenBranchesPerCycle : 0);
  const Bound busiest = BusiestUnit(ops);
  c.units = busiest.cycles;
  c.busiest = busiest.name;
  c.cycles = std::max({c.recurrence, c.front_end, c.units});
  for (const DataflowOp& op : ops) c.through_memory |= op.load_slot >= 0;
  return c;
}

}  // namespace pathprof::decoders
