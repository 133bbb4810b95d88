// llvm-mca, LLVM's machine code analyzer (Debian's llvm package), as the reference the cycle
// model (cycle_model.h) is measured against: tests and benchmarks run both on the same blocks.
// It simulates the host CPU's scheduling model cycle by cycle (-mcpu=native) on assembly text.
//
// Not on the product path: the cycle model used to fork it for each batch of new blocks, and
// that cost more CPU than a collector may spend (docs/performance.md). Nothing in pathprof's
// programs calls this file, so the linker leaves it out of them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/code_blocks.h"

namespace pathprof::decoders {

struct LlvmMcaOptions {
  std::string llvm_mca = "llvm-mca";  // a path, or a name looked up in PATH
  std::string cpu = "native";         // llvm-mca -mcpu
  uint32_t iterations = 100;          // simulated runs of each block
  size_t max_blocks_per_run = 400;    // larger sets are split into several runs
  int timeout_ms = 600000;            // one llvm-mca run
};

struct LlvmMcaStats {
  uint64_t runs = 0;
  uint64_t failed_runs = 0;  // then the blocks were split and retried
};

// Ok when llvm-mca runs (`llvm-mca --version`); otherwise what to install.
Status LlvmMcaAvailable(const LlvmMcaOptions& options = {});

// Steady-state cycles per run of each block (all of its bytes, run back to back): llvm-mca's
// total cycles over its iterations. NaN for a block llvm-mca cannot analyze (a run that fails
// is split in halves until the culprits stand alone). Fails when llvm-mca cannot be run.
Result<std::vector<double>> LlvmMcaCycles(std::span<const CodeBlock> blocks,
                                          const LlvmMcaOptions& options = {},
                                          LlvmMcaStats* stats = nullptr);

// The block as the assembly llvm-mca reads (Intel syntax, one instruction per line, relative
// branches aimed at `label`); empty when it does not decode.
std::string BlockAssembly(const CodeBlock& block, const std::string& label);

}  // namespace pathprof::decoders
