// A block's steady-state cycles per iteration when it runs back to back, as in a loop: the
// largest of three bounds an out-of-order core cannot beat.
//   - recurrence: the loop-carried dependency chain. Each iteration's instructions wait for
//     their inputs (registers, flags, and values stored and loaded back at one address) and
//     produce their outputs a latency later; values carried from one iteration to the next
//     make the iterations' finishing times grow by the longest chain's latency per iteration.
//   - front end: macro-ops over the dispatch width, and one taken branch per cycle when the
//     block ends in its branch back.
//   - execution units: per unit (loads, stores, branches, the multiplier, the dividers, the FP
//     and vector pipes), its work over how much of it starts per cycle.
// Why this rather than a cycle-by-cycle simulation (llvm-mca): it is what time-weighting
// branch windows needs - the ratio between blocks of different dependency structure - at a
// few microseconds per block and without a subprocess; its error against llvm-mca is measured
// in docs/profiles.md.
#pragma once

#include <span>

#include "block_dataflow.h"

namespace pathprof::decoders {

struct LoopCycles {
  double cycles = 0;            // the estimate: the largest bound below
  double recurrence = 0;        // loop-carried dependency chain
  double front_end = 0;         // dispatch width, taken branches
  double units = 0;             // the busiest execution unit or pipe group
  const char* busiest = "";     // its name
  bool through_memory = false;  // some load reads back a store of the block
};

// `ops` after BlockDataflow::LinkStoresToLoads; `loops_back`: the last op is the block's
// branch back to its start (one taken branch per iteration).
LoopCycles TimeLoop(std::span<const DataflowOp> ops, bool loops_back);

}  // namespace pathprof::decoders
