// A window's runs of code timed in the order they ran (decoders/cycle_model.h,
// CycleModel::WindowDurations): each instruction starts once the front end has dispatched it
// (kDispatchWidth macro-ops a cycle, a taken branch ending its fetch cycle) and its inputs are
// ready (registers and flags from whichever earlier instruction of the window wrote them, a
// value the same run stored and loads back from that store, a load kLoadLatency after its
// address), and the window cannot run faster than its busiest execution unit. A run's duration
// is how much later the window's last result is ready after it than before it.
//
// Why not time each run as a loop of itself (loop_cycles.h, which ExplainCode still does): a
// run that does not branch back to its own start takes its inputs next time from the code
// between, so its loop-carried chain is an artefact (zstd -19's cost function reloads a field
// into the register it came in: 10 cycles as a loop, 1 in its caller), while a chain that does
// carry from one run to another (a loop whose body is several runs) is seen only across runs.
// Against exact traces this weighting did better than the per-run loop on every program
// measured (docs/profiles.md, "Windows timed as they ran").
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "block_dataflow.h"
#include "unit_work.h"

namespace pathprof::decoders {

// One instruction as the timer needs it; its slots follow in TimedRuns' slot list (inputs,
// then address inputs, then outputs).
struct TimedOp {
  uint8_t latency = 0;
  uint8_t load_latency = 0;  // 0: no load
  uint8_t dispatch = 0;      // macro-ops
  Unit unit = Unit::kNone;
  uint8_t inputs = 0, address_inputs = 0, outputs = 0;
  uint8_t loads : 4 = 0, stores : 4 = 0;  // memory operands (at most two an instruction)
  int16_t load_slot = -1;                 // the run's store this load reads back (a memory slot)
  int16_t store_slot = -1;                // the memory slot it stores to
  float occupancy = 0;                    // cycles on `unit`
  uint32_t first_slot = 0;
};

// Decoded runs, stored flat: a cached run costs about 30 bytes an instruction.
class TimedRuns {
 public:
  struct Run {
    uint32_t first_op = 0, ops = 0;
  };
  Run Add(std::span<const DataflowOp> ops);
  std::span<const TimedOp> Ops(Run run) const {
    return std::span(ops_).subspan(run.first_op, run.ops);
  }
  const uint16_t* slots() const { return slots_.data(); }
  size_t instructions() const { return ops_.size(); }
  size_t memory_bytes() const {
    return ops_.capacity() * sizeof(TimedOp) + slots_.capacity() * sizeof(uint16_t);
  }
  void Clear();

 private:
  std::vector<TimedOp> ops_;
  std::vector<uint16_t> slots_;
};

class WindowTimer {
 public:
  explicit WindowTimer(const TimedRuns& runs) : runs_(runs) {}
  // A new window: every register ready, nothing dispatched.
  void Start();
  // Times `run` after the window's runs so far; returns how much later the window's work
  // finishes with it (cycles). `ends_taken`: the run ends at a taken branch.
  double Add(TimedRuns::Run run, bool ends_taken);

 private:
  const TimedRuns& runs_;
  std::array<double, kSlotCount> ready_{};
  UnitWork units_;  // the window's work so far
  double dispatched_ = 0, finished_ = 0;
};

}  // namespace pathprof::decoders
