// llvm-mca, LLVM's machine code analyzer (Debian's llvm package), as the reference the cycle
// model (cycle_model.h) is measured against: tests and benchmarks run both on the same blocks.
// It simulates a CPU's scheduling model cycle by cycle on assembly text: by default AMD Zen 3
// (-mcpu=znver3), the core the model's figures stand for (instruction_costs.h), whatever the
// host. With -mcpu=native the reference timed whichever core ran the tests: on an AMD EPYC Zen 2
// host (family 23) LLVM's znver2 model put the median error at 11.5% and failed the accuracy
// test's 10% bar, where against Zen 3 the same blocks give 4.8%.
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
  std::string cpu = "znver3";         // llvm-mca -mcpu ("native": the host's core)
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
