// The knobs of a synthetic program, and the bundled named workloads built from them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::synth {

// Everything that shapes a generated program. The same spec (seed included) always generates
// the same program and, executed with the same seed, the same branch stream.
struct WorkloadSpec {
  std::string name = "custom";
  uint64_t seed = 1;

  // Program size and call structure.
  uint32_t functions = 16;           // including the driver (main)
  uint32_t call_levels = 3;          // levels of the call DAG below main; bounds the call depth
  double call_prob = 0.15;           // chance that a statement is a direct call
  double indirect_call_prob = 0.05;  // chance that a statement is an indirect call via a table
  uint32_t indirect_targets = 4;     // targets per indirect call table
  double recursive_fraction = 0.0;   // fraction of functions that call themselves (guarded)
  uint32_t max_recursion = 4;        // bound on the depth of self-recursion
  uint32_t main_dispatch = 0;  // >0: main calls level-1 functions through a table of this size

  // Shape of function bodies: how many distinct paths there are.
  uint32_t statements = 4;  // mean statements per region (body of a function or loop)
  uint32_t diamonds = 2;    // mean if/else diamonds per region: 2^diamonds paths per body
  double loop_prob = 0.25;  // chance that a statement is a loop
  uint32_t max_loop_nesting = 2;
  uint32_t mean_trip_count = 8;  // loop iterations per entry (drawn around this mean)
  double switch_prob = 0.0;      // chance that a statement is a switch (indirect jump)
  uint32_t switch_cases = 6;

  // Behaviour of conditional branches.
  // Bias of each if/else branch: p(taken) = 0.5 * u^skew (or 1 minus that) for uniform u, so
  // skew 0 is a coin flip and larger skew makes most branches strongly biased.
  double skew = 2.0;
  // Chance that a branch repeats (or inverts) the outcome of the previous branch of its
  // function: correlated branches keep the number of distinct paths below 2^diamonds.
  double correlation = 0.3;
  // Zipf exponent of target popularity in indirect call tables, switches and main's dispatch.
  double zipf = 1.0;

  // Synthesize `cycles` (instructions + block stall + mispredict penalty) and `mispredicted`
  // (outcome differs from the branch's majority direction) deterministically.
  bool synthesize_metrics = true;
};

// Names of the bundled workloads, in a stable order: "loops", "branchy", "calls", "large".
std::vector<std::string> BundledWorkloadNames();
// One line saying what a bundled workload models.
std::string BundledWorkloadDescription(std::string_view name);
// The spec of a bundled workload with the given seed; kNotFound for an unknown name.
Result<WorkloadSpec> BundledWorkload(std::string_view name, uint64_t seed = 1);

}  // namespace pathprof::synth
