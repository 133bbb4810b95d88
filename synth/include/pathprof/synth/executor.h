// Runs a synthetic program and produces the branch stream it retires.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/synth/program.h"

namespace pathprof::synth {

// Counts of what the executor did, for tests and reports.
struct ExecutorStats {
  uint64_t branches = 0;
  uint64_t instructions = 0;
  uint64_t calls = 0;
  uint64_t returns = 0;
  uint64_t max_call_depth = 0;
};

// Interprets a Program. Deterministic: the same program and seed give the same stream.
// The program must outlive the executor.
class Executor {
 public:
  Executor(const Program& program, uint64_t seed);

  // Appends exactly `n` events to *out.
  void Run(size_t n, std::vector<BranchEvent>* out);
  // Writes exactly `n` events to out[0..n).
  void Run(size_t n, BranchEvent* out);

  const ExecutorStats& stats() const { return stats_; }
  size_t call_depth() const { return frames_.size() - 1; }

 private:
  struct Frame {
    uint32_t return_block;
    uint32_t function;
    uint32_t counter_base;
    uint32_t recursion;
  };
  struct LoopCounter {
    uint32_t iteration;
    uint32_t trips;
  };

  uint64_t NextRandom();
  uint32_t Draw32() { return static_cast<uint32_t>(NextRandom() >> 32); }
  bool DecideConditional(const Block& b, bool* mispredicted);
  uint32_t Pick(const Table& t);
  void PushFrame(uint32_t function, uint32_t return_block);

  const Program* program_;
  uint64_t rng_;
  uint32_t current_ = 0;
  uint32_t pending_instructions_ = 0;
  uint32_t pending_stall_ = 0;
  bool last_outcome_ = false;
  uint32_t correlation_threshold_ = 0;
  std::vector<Frame> frames_;
  std::vector<LoopCounter> counters_;
  ExecutorStats stats_;
};

// A synthetic thread: a program plus its executor, delivering the stream in batches.
class SyntheticStream {
 public:
  static Result<SyntheticStream> Create(const WorkloadSpec& spec, uint32_t pid = 4242,
                                        uint32_t tid = 4242);
  SyntheticStream(SyntheticStream&&) noexcept = default;
  SyntheticStream& operator=(SyntheticStream&&) noexcept = default;

  // Fills *batch with the next `n` events (replacing its contents); the first batch has
  // gap_before = true, the rest false. time_ns advances by one nanosecond per instruction.
  void NextBatch(size_t n, BranchBatch* batch);

  const Program& program() const { return *program_; }
  const Executor& executor() const { return *executor_; }

 private:
  SyntheticStream() = default;
  std::unique_ptr<Program> program_;  // heap-held so the executor's pointer survives moves
  std::unique_ptr<Executor> executor_;
  uint32_t pid_ = 0, tid_ = 0;
  uint64_t batches_ = 0;
};

// Writes `branches` events of the workload to a .pbs file in batches of `batch_size`, with
// meta records naming the workload and seed.
Status WriteSyntheticPbs(const WorkloadSpec& spec, uint64_t branches, const std::string& path,
                         size_t batch_size = 65536);

}  // namespace pathprof::synth
