// One x86-64 instruction as the branch-stream builders need it: its length, whether and how it
// transfers control, and the target of a direct branch. Used by the exact ptrace tracer and by
// the PT decoder to walk the instructions inside a libipt block.
// (A stop-gap until the shared Zydis classifier in x86_branch.h lands; same job, small API.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "pathprof/core/branch.h"

namespace pathprof::decoders {

struct X86Insn {
  uint64_t target = 0;  // valid when has_target (direct near branch)
  uint8_t length = 0;
  BranchKind kind = BranchKind::kUnknown;  // meaningful only when is_branch
  bool is_branch = false;
  bool has_target = false;
  bool repeats = false;  // REP-prefixed string op: single-step stops once per iteration
};

// Decodes the instruction at `ip` from `bytes` (up to `size` bytes available).
// Returns false when the bytes are not a valid instruction (or are cut short).
bool DecodeX86(const uint8_t* bytes, size_t size, uint64_t ip, X86Insn* out);

}  // namespace pathprof::decoders
