// How long x86-64 code takes, estimated in process from its instructions with figures for
// current x86-64 cores (AMD Zen 3 / Zen 4; decoders/src/instruction_costs.h says where they come
// from): a window of branches timed as it ran (WindowDurations), and straight-line code timed
// as a loop of itself (EstimateCode: its loop-carried dependency chain, the front end's width,
// the execution units it competes for), which the tests and benchmarks hold against llvm-mca
// and timed loops.
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
// Runs of code are decoded once and cached per (start address, instruction count). A run whose
// code cannot be read, or that holds an instruction without a fixed cost (a repeated string
// operation, a system call, cpuid), has no duration of its own: nothing is guessed about it,
// it gets its window's rate, and everything is counted in stats().
#pragma once

#include <atomic>
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

class TimedRuns;  // src/window_timer.h

struct CycleModelOptions {
  uint32_t max_block_instructions = 4096;
  // The cache of decoded runs starts over (counted), its memory released, past either bound:
  // about 30 bytes an instruction, its arrays growing by doubling, so at most ~5 MiB a model
  // with the map. zstd's and python3's hot code is 10,000-20,000 instructions.
  size_t max_cached_blocks = 1 << 16;
  size_t max_cached_instructions = 1 << 16;
};

// "Blocks" here are runs of code between taken branches (WindowDurations).
struct CycleModelStats {
  uint64_t blocks_estimated = 0;   // distinct blocks decoded and timed
  uint64_t cache_hits = 0;         // blocks found decoded in the cache
  uint64_t unreadable_blocks = 0;  // code unknown, undecodable, or not ending at the branch
  uint64_t rejected_blocks = 0;    // holding an instruction without a fixed cost (rep movs, ...)
  uint64_t cache_resets = 0;
  uint64_t imputed_blocks = 0;  // blocks without an estimate, given their window's rate
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

  // Cycles of the block each event ends (from the previous event's `to` through this event's
  // `from`, `instructions` long) for a window of time-uniform sampling: the window's runs of
  // code (a block that ends at a not-taken branch with the ones after it through the next
  // taken branch) timed in the order they ran, each instruction waiting for the front end and
  // for its inputs from whichever instruction of the window wrote them, no faster than the
  // busiest execution unit (src/window_timer.h says why not each run as a loop); a run's
  // cycles shared among its blocks by instructions. A block without an estimate (unreadable,
  // or an instruction without a fixed cost) gets the window's own cycles per instruction (or
  // the mean over every window so far, or 1 when there is none yet), so that it does not make
  // its window look fast, counted in stats().imputed_blocks. 0 for the first event (its block
  // began before the window) and for events without an instruction count.
  std::vector<double> WindowDurations(std::span<const BranchEvent> events, const CodeReader& code);

  // Cycles of the straight-line code in `code` (decoded from `address` to its end), and what
  // bounds them. Not cached, not counted in stats().
  Result<double> EstimateCode(std::span<const uint8_t> code, uint64_t address) const;
  Result<CycleEstimate> ExplainCode(std::span<const uint8_t> code, uint64_t address) const;

  const CycleModelStats& stats() const { return stats_; }
  // About what its cache of decoded runs holds, as of the last WindowDurations; safe to read
  // from another thread while WindowDurations runs.
  uint64_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }

 private:
  explicit CycleModel(const CycleModelOptions& options);
  // A run of code: its start and instructions.
  struct RunKey {
    uint64_t start = 0;
    uint32_t instructions = 0;
    bool operator==(const RunKey&) const = default;
  };
  struct RunKeyHash {
    size_t operator()(const RunKey& k) const {
      return std::hash<uint64_t>()(k.start * 0x9E3779B97F4A7C15ull ^ k.instructions);
    }
  };
  struct CachedRun {
    uint32_t first_op = 0, ops = 0;
    bool known = false;  // decoded, every instruction with a fixed cost
  };
  // The run of blocks `run`, from `start`, decoded into runs_ (known = false, counted, when it
  // cannot be read or has an instruction without a fixed cost).
  CachedRun DecodeRun(uint64_t start, std::span<const BranchEvent> run, const CodeReader& code);

  CycleModelOptions options_;
  CycleModelStats stats_;
  double cycles_seen_ = 0, instructions_seen_ = 0;  // over WindowDurations' estimated blocks
  std::unique_ptr<TimedRuns> runs_;
  std::unordered_map<RunKey, CachedRun, RunKeyHash> cache_;
  std::atomic<uint64_t> memory_bytes_{0};
};

}  // namespace pathprof::decoders
