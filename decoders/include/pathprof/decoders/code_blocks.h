// Basic blocks of real code, to measure the cycle model (cycle_model.h) against its reference
// (llvm_mca_reference.h) in tests and benchmarks: an ELF image's executable segments swept
// linearly and cut after every branch, as ptrace-burst windows cut a thread's code at its
// branches. Not on the product path.
#pragma once

#include <cstdint>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

struct CodeBlock {
  uint64_t address = 0;  // of its first instruction (ELF virtual address)
  std::vector<uint8_t> bytes;
  uint32_t instructions = 0;  // the last one a branch
};

struct CodeBlockSampling {
  size_t max_blocks = 1000;        // kept evenly spread over the image when there are more
  uint32_t max_instructions = 64;  // longer runs without a branch are skipped
};

// Distinct blocks (by their bytes) of `image`'s code, in address order. Padding (nop, int3)
// before a block is skipped; bytes that do not decode end the block being read, and the sweep
// resumes at the next byte. kNotFound when the image has no executable bytes.
Result<std::vector<CodeBlock>> SampleCodeBlocks(const ElfImage& image,
                                                const CodeBlockSampling& sampling = {});

}  // namespace pathprof::decoders
