// A generated synthetic program: functions made of basic blocks at concrete x86-like addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/synth/workload.h"

namespace pathprof::synth {

// How a block ends. kFallThrough blocks have no branch: execution runs on into the next block,
// so a dynamic block (from one branch target to the next branch) may span several of them.
enum class Terminator : uint8_t {
  kFallThrough,
  kConditional,   // taken: `target`; not taken: the next block
  kJump,          // direct jump to `target`
  kCall,          // direct call to function `callee`; returns to the next block
  kIndirectCall,  // call through table `table`; returns to the next block
  kSwitch,        // indirect jump through table `table` of block indices
  kReturn,
};

// What decides a conditional branch.
enum class CondMode : uint8_t {
  kBiased,          // taken with a fixed probability
  kCorrelated,      // repeats (or inverts) the previous outcome, else biased
  kLoopLatch,       // back-edge: taken until the loop's trip count is reached
  kRecursionGuard,  // taken (skip the recursive call) at the recursion bound, else biased
};

struct Block {
  uint64_t start = 0;   // address of the first instruction
  uint64_t end = 0;     // address just past the last instruction (the next block's start)
  uint64_t branch = 0;  // address of the terminating branch instruction (if any)
  uint32_t function = 0;
  uint32_t target = 0;     // block index (kConditional, kJump) or function index (kCall)
  uint32_t table = 0;      // index into Program::tables (kIndirectCall, kSwitch)
  uint32_t loop_slot = 0;  // kLoopLatch: loop index within the function
  uint32_t threshold = 0;  // taken when a 32-bit random draw is below this
  uint16_t instructions = 0;
  uint16_t stall_cycles = 0;  // extra cycles a visit costs (synthesized cache misses)
  Terminator term = Terminator::kFallThrough;
  CondMode mode = CondMode::kBiased;
  bool invert = false;  // kCorrelated: take the opposite of the previous outcome
};

struct Function {
  std::string name;
  uint32_t entry = 0;        // index of its first block
  uint32_t block_count = 0;  // blocks entry .. entry + block_count - 1
  uint32_t level = 0;        // 0 = main
  uint32_t loops = 0;        // loop counters a frame needs
  bool recursive = false;
};

struct Loop {
  uint32_t mean_trips = 1;
  uint32_t jitter = 0;  // trips drawn uniformly in [mean - jitter, mean + jitter]
};

// A table of indirect targets (functions for calls, blocks for switches) with cumulative
// 32-bit thresholds: entry i is chosen when the draw is below cumulative[i].
struct Table {
  std::vector<uint32_t> targets;
  std::vector<uint32_t> cumulative;
};

struct Program {
  WorkloadSpec spec;
  std::vector<Function> functions;  // functions[0] is main, which never returns
  std::vector<Block> blocks;        // in address order
  std::vector<Table> tables;
  std::vector<std::vector<Loop>> loops;  // per function, indexed by Block::loop_slot

  uint64_t text_start = 0;
  uint64_t text_end = 0;

  // Index of the block containing `address`, or -1.
  int64_t BlockAt(uint64_t address) const;
  // The branch kind a terminator emits (kUnknown for kFallThrough).
  static BranchKind KindOf(Terminator t);
};

// Generates the program a spec describes; kInvalidArgument for an unusable spec.
Result<Program> GenerateProgram(const WorkloadSpec& spec);

}  // namespace pathprof::synth
