// The basic-block stream OSP samples: a block starts at every branch's `to` (docs/design.md §4)
// and is identified by that start address.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pathprof/core/branch.h"

namespace pathprof::profiles {

using BlockId = uint64_t;

// The id of the block that begins right after `event` retires.
inline BlockId BlockStartedBy(const BranchEvent& event) {
  return event.to;
}

// Calls fn(BlockId) for every block of `batch`, in retirement order. Kept as a template so the
// per-block call inlines into the skip loop.
template <typename Fn>
void ForEachBlock(const BranchBatch& batch, Fn&& fn) {
  for (const BranchEvent& e : batch.events) fn(BlockStartedBy(e));
}

inline size_t BlockCount(const BranchBatch& batch) {
  return batch.events.size();
}

}  // namespace pathprof::profiles
