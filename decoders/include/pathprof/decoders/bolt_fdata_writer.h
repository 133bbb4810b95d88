// BOLT's fdata profile (what perf2bolt writes and `llvm-bolt -data` reads), written straight
// from a branch recording, without perf.data and perf2bolt in between. One line per distinct
// branch touching the binary:
//   1 <function> <hex offset> 1 <function> <hex offset> <mispredictions> <count>
// where an end outside the binary's functions is `0 [unknown] 0`. Taken branches are written
// source instruction -> target; a conditional branch that was not taken is written as BOLT's
// fall-through edge, branch instruction -> next instruction (as perf2bolt writes them).
#pragma once

#include <cstdint>
#include <string>

#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

struct BoltFdataStats {
  uint64_t mappings = 0;       // mappings of the binary found among the recording's images
  uint64_t taken = 0;          // taken branches counted into lines
  uint64_t fall_throughs = 0;  // not-taken conditional branches counted into lines
  uint64_t elsewhere = 0;      // branches with neither end in the binary (not written)
  uint64_t unnamed = 0;        // in the binary but outside its function symbols at both ends
  uint64_t far_transfers = 0;  // syscalls, interrupts, signals: not branches BOLT can lay out
  uint64_t lines = 0;          // distinct (from, to) lines written
};

// Counts every branch of every batch once (an exact trace gives true counts; a window of a
// software LBR counts as one LBR sample does). `binary` is the image of the file whose profile
// is written, and its mappings are the recording's images at `binary_path` (not the image's own
// name: a cached image keeps the name it was first read under). kNotFound if the recording
// never mapped it; kIo if `output` cannot be written.
Result<BoltFdataStats> WriteBoltFdata(const PbsContents& recording, const ElfImage& binary,
                                      const std::string& binary_path, const std::string& output);

}  // namespace pathprof::decoders
