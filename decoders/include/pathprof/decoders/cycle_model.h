// How long straight-line x86-64 code takes, estimated with llvm-mca, LLVM's machine code
// analyzer (it runs the code through the host CPU's scheduling model): the steady-state cycles
// per run of a block executed back to back, as in a loop.
//
// Why: ptrace bursts start at time-uniform interrupts, so a block is sampled in proportion to
// the time it takes, not the branches it retires. Weighting windows by instructions is right
// only when every block retires instructions at the same rate; a loop whose body is one long
// dependency chain retires half as many per cycle and draws twice the interrupts per
// instruction (docs/profiles.md, "ptrace bursts accuracy"). With the cycles of each window's
// blocks the window estimator (hwmodel::WindowStarts::kTime) can weight by time instead.
//
// Why a subprocess: llvm-mca as a library is LLVM's C++ API (no stable ABI, ~100 MB); the tool
// is in Debian's llvm package and reads assembly text. Blocks are cached per (start address,
// instruction count); each BlockCycles call sends the blocks new to it to one llvm-mca run.
// A block llvm-mca rejects (an instruction it cannot parse) is retried alone and otherwise has
// no duration; nothing is guessed, everything is counted in stats().
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
  std::string llvm_mca = "llvm-mca";  // a path, or a name looked up in PATH
  std::string cpu = "native";         // llvm-mca -mcpu
  uint32_t iterations = 100;          // simulated runs of each block
  uint32_t max_block_instructions = 4096;
  size_t max_cached_blocks = 1 << 16;  // then the cache starts over (counted)
  int timeout_ms = 60000;              // one llvm-mca run
};

struct CycleModelStats {
  uint64_t blocks_estimated = 0;  // distinct blocks llvm-mca gave a duration
  uint64_t cache_hits = 0;
  uint64_t unreadable_blocks = 0;  // code unknown, undecodable, or not ending at the branch
  uint64_t rejected_blocks = 0;    // llvm-mca could not analyze them
  uint64_t mca_runs = 0;
  uint64_t mca_failures = 0;  // runs that failed as a whole (then blocks are retried alone)
  uint64_t cache_resets = 0;
  uint64_t imputed_blocks = 0;  // WindowDurations: blocks without an estimate, filled in
};

// The code at a runtime address: bytes from there on (at least one instruction's worth), or an
// empty span when unknown.
using CodeReader = std::function<std::span<const uint8_t>(uint64_t address)>;

class CycleModel {
 public:
  // Fails with what to do when llvm-mca cannot be run (not installed, or it cannot analyze a
  // one-instruction block for `cpu`).
  static Result<std::unique_ptr<CycleModel>> Create(const CycleModelOptions& options = {});
  ~CycleModel();
  CycleModel(const CycleModel&) = delete;
  CycleModel& operator=(const CycleModel&) = delete;

  // Cycles of the block each event ends: from the previous event's `to` through this event's
  // `from`, `instructions` long. 0 for the first event (its block began before the window), for
  // events without an instruction count, and for blocks that cannot be read or analyzed.
  std::vector<double> BlockCycles(std::span<const BranchEvent> events, const CodeReader& code);

  // BlockCycles for a window of time-uniform sampling, every block with an instruction count
  // given a duration: one without an estimate gets the window's own cycles per instruction (or
  // the mean over every window so far, or 1 when there is none yet), so that an unreadable
  // block does not make its window look fast. Counted in stats().imputed_blocks.
  std::vector<double> WindowDurations(std::span<const BranchEvent> events, const CodeReader& code);

  // Cycles of the straight-line code in `code` (decoded from `address` to its end).
  Result<double> EstimateCode(std::span<const uint8_t> code, uint64_t address);

  const CycleModelStats& stats() const { return stats_; }

 private:
  struct Block {
    uint64_t start = 0;
    uint32_t instructions = 0;
    std::string assembly;  // one instruction per line, Intel syntax
  };
  explicit CycleModel(const CycleModelOptions& options) : options_(options) {}
  // The assembler label a block's branches target: placed at the block's end.
  static std::string Label(uint64_t start, uint32_t instructions);
  // The block's assembly, or empty when its code cannot be read, decoded, or does not end at
  // `last` (the branch the event names).
  std::string Disassemble(uint64_t start, uint32_t instructions, uint64_t last,
                          const CodeReader& code) const;
  // Cycles per run of each block (NaN where llvm-mca gave none), from one llvm-mca run.
  Result<std::vector<double>> RunMca(const std::vector<const Block*>& blocks);
  std::vector<double> Estimate(const std::vector<const Block*>& blocks);

  CycleModelOptions options_;
  CycleModelStats stats_;
  double cycles_seen_ = 0, instructions_seen_ = 0;  // over WindowDurations' estimated blocks
  struct KeyHash {
    size_t operator()(const std::pair<uint64_t, uint32_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::unordered_map<std::pair<uint64_t, uint32_t>, double, KeyHash> cache_;  // NaN: no duration
};

}  // namespace pathprof::decoders
