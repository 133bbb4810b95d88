// Turns pathprof's results into pprof samples: weighted calling-context stacks (what a PCCT
// yields) and hot paths (a path count as its own sample type). Plain structs in and out, so any
// producer can use them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/pprof_export.h"

namespace pathprof::profiles::pprof {

// One calling context and how often it was seen.
struct WeightedStack {
  std::vector<Location> frames;  // leaf first
  int64_t weight = 0;
  std::vector<StringLabel> labels;
};

// Sample values are weight * per_weight[i]: with sample types {samples,count},{cpu,nanoseconds}
// and a 10 ms period, per_weight = {1, 10'000'000}; a trailing path_count type gets 0.
// kInvalidArgument on a negative weight, kResourceExhausted when a product overflows int64.
Result<std::vector<Sample>> SamplesFromStacks(std::span<const WeightedStack> stacks,
                                              std::span<const int64_t> per_weight);

// One basic block of a path.
struct PathBlock {
  uint64_t address = 0;  // of the block's first instruction; 0 if unknown
  std::string name;      // e.g. "B3" or "0x401a2c"; empty: named by address
  std::string file;
  int64_t line = 0;
};

// A hot path inside one function: the blocks in execution order and how often it ran.
struct HotPath {
  Location function;  // where the path's function starts (its entry), named
  std::vector<PathBlock> blocks;
  int64_t count = 0;
  int64_t path_id = -1;  // e.g. its Ball-Larus id; <0: none
  std::vector<StringLabel> labels;
};

// A path as a pprof sample: the root-end frame is the path's function, then one frame per block
// in execution order, so the leaf is the path's last block. Each block is its own pprof function
// named "<block> in <function>" ("0x<address> in <function>" for unnamed blocks), so `-top` ranks
// blocks and `-traces` prints each path block by block; `-peek`/`-tree` show how paths branch.
// (The block comes first because pprof's display shortening cuts C++ names after "ns::C::f".) The
// count goes to values[value_index] (the path_count type), every other value is 0. A numeric label
// "path_id" carries path_id when given.
// kInvalidArgument when the path has no blocks, the function is unnamed, value_index is out of
// range or count is negative.
Result<Sample> SampleFromPath(const HotPath& path, size_t num_values, size_t value_index);

}  // namespace pathprof::profiles::pprof
