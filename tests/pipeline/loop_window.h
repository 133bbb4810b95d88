// A synthetic branch window the pipeline tests feed to sessions and stores.
#pragma once

#include <cstdint>

#include "pathprof/core/branch.h"

namespace pathprof::testing {

// A window of a two-branch loop at 0x1000 of pid 4242, thread 7: 16 branches, 8 taken back
// edges, the conditional alternating.
inline BranchBatch LoopWindow(uint64_t time_ns) {
  BranchBatch b;
  b.pid = 4242;
  b.tid = 7;
  b.time_ns = time_ns;
  b.window = true;
  for (int i = 0; i < 8; ++i) {
    b.events.push_back({0x1008, 0x1010, 0, 3, BranchKind::kConditional, i % 2 == 0});
    b.events.push_back({0x1020, 0x1000, 0, 4, BranchKind::kDirectJump, true});
  }
  return b;
}

}  // namespace pathprof::testing
