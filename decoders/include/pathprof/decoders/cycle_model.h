// How long straight-line x86-64 code takes: the steady-state cycles per run of a block executed
// back to back, as in a loop, estimated in process from the block's instructions - the
// loop-carried dependency chain through their latencies, the front end's width, and the
// execution units they compete for, with figures for current x86-64 cores (AMD Zen 3 / Zen 4;
// decoders/src/instruction_costs.h says where they come from).
//
// Why: ptrace bursts start at time-uniform interrupts, so a block is sampled in proportion to
// the time it takes, not the branches it retires. Weighting windows by instructions is right
// only when every block retires instructions at the same rate; a loop whose body is one long
// dependency chain retires half as many per cycle and draws twice the interrupts per
// instruction (docs/profiles.md, "ptrace bursts accuracy"). With the cycles of each window's
// blocks the window estimator (hwmodel::WindowStarts::kTime) can weight by time instead.
//
// Why in process: this used to fork llvm-mca for each batch of new blocks, about 24 processes
// and most of a CPU-second per profiled run, more than a collector delivering hundreds of
// windows a second may spend. The model here costs microseconds per distinct block (figures and
// its error against llvm-mca in docs/performance.md and docs/profiles.md); llvm-mca remains the
// reference the tests and benchmarks measure it against (llvm_mca_reference.h).
//
// Blocks are cached per (start address, instruction count, taken or not at their end). A block
// whose code cannot be read, or that holds an instruction without a fixed cost (a repeated string
// operation, a system call, cpuid), has no duration: nothing is guessed, everything is counted in
// stats().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::decoders {

struct CycleModelOptions {
  uint32_t max_block_instructions = 4096;
  size_t max_cached_blocks = 1 << 16;  // then the cache starts over (counted)
};

// "Blocks" here are runs of code between taken branches (BlockCycles).
struct CycleModelStats {
  uint64_t blocks_estimated = 0;   // distinct blocks the model gave a duration
  uint64_t cache_hits = 0;         // blocks answered from the cache
  uint64_t unreadable_blocks = 0;  // code unknown, undecodable, or not ending at the branch
  uint64_t rejected_blocks = 0;    // holding an instruction without a fixed cost (rep movs, ...)
  uint64_t cache_resets = 0;
  uint64_t imputed_blocks = 0;  // WindowDurations: blocks without an estimate, filled in
};

// What limits a block's cycles per iteration: the estimate is the largest of the three bounds.
struct CycleEstimate {
  double cycles = 0;
  double recurrence = 0;  // the loop-carried dependency chain
  double front_end = 0;   // macro-ops over the dispatch width; one taken branch per cycle
  double units = 0;       // the busiest execution unit or pipe group, named in `busiest`
  std::string busiest;
  bool through_memory = false;  // a load reads back what the block stored (a counter in memory)
};

// The code at a runtime address: bytes from there on (at least one instruction's worth), or an
// empty span when unknown.
using CodeReader = std::function<std::span<const uint8_t>(uint64_t address)>;

class CycleModel {
 public:
  // Fails only on options it cannot work with.
  static Result<std::unique_ptr<CycleModel>> Create(const CycleModelOptions& options = {});
  ~CycleModel();
  CycleModel(const CycleModel&) = delete;
  CycleModel& operator=(const CycleModel&) = delete;

  // Cycles of the block each event ends: from the previous event's `to` through this event's
  // `from`, `instructions` long. Blocks that end at a not-taken branch are timed with the ones
  // after them through the next taken branch, as one run of code (the core overlaps them), and
  // the run's cycles are shared among its blocks by instructions. A run that branches back to
  // its own start is timed as the loop it is; any other run by its throughput alone (front end
  // and execution units), without a loop-carried chain: its inputs next time come from the
  // code between. 0 for the first event (its
  // block began before the window), for events without an instruction count (and the run they
  // are in), and for blocks that cannot be read or estimated.
  std::vector<double> BlockCycles(std::span<const BranchEvent> events, const CodeReader& code);

  // BlockCycles for a window of time-uniform sampling, every block with an instruction count
  // given a duration: one without an estimate gets the window's own cycles per instruction (or
  // the mean over every window so far, or 1 when there is none yet), so that an unreadable
  // block does not make its window look fast. Counted in stats().imputed_blocks.
  std::vector<double> WindowDurations(std::span<const BranchEvent> events, const CodeReader& code);

  // Cycles of the straight-line code in `code` (decoded from `address` to its end), and what
  // bounds them. Not cached, not counted in stats().
  Result<double> EstimateCode(std::span<const uint8_t> code, uint64_t address) const;
  Result<CycleEstimate> ExplainCode(std::span<const uint8_t> code, uint64_t address) const;

  const CycleModelStats& stats() const { return stats_; }

 private:
  explicit CycleModel(const CycleModelOptions& options) : options_(options) {}
  // The cycles of the run of blocks `run` ends, from `start`: NaN (and counted) when it
  // cannot be read or has no estimate.
  double EstimateRun(uint64_t start, std::span<const BranchEvent> run, const CodeReader& code);

  CycleModelOptions options_;
  CycleModelStats stats_;
  double cycles_seen_ = 0, instructions_seen_ = 0;  // over WindowDurations' estimated blocks
  // A run of code: its start, instructions, whether it ends at a taken branch and whether that
  // branch goes back to its start (an indirect branch or a return may or may not).
  struct RunKey {
    uint64_t start = 0;
    uint32_t instructions = 0;
    bool taken = true;
    bool loops_back = false;
    bool operator==(const RunKey&) const = default;
  };
  struct RunKeyHash {
    size_t operator()(const RunKey& k) const {
      return std::hash<uint64_t>()(k.start * 0x9E3779B97F4A7C15ull ^ k.instructions ^
                                   (uint64_t{k.taken} << 40) ^ (uint64_t{k.loops_back} << 41));
    }
  };
  std::unordered_map<RunKey, double, RunKeyHash> cache_;  // NaN: no duration
};

}  // namespace pathprof::decoders
