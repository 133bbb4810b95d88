// x86-64 instruction classification: one instruction's length and, if it transfers control,
// its BranchKind and direct target. Backed by Zydis; used by the LBR fall-through walk, the
// branch cache and the exact ptrace tracer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::decoders {

// The longest legal x86 instruction; a caller holding at least this many bytes never gets a
// spurious "truncated" answer.
inline constexpr size_t kX86MaxInstructionLength = 15;

struct X86Instruction {
  uint8_t length = 0;
  bool is_branch = false;
  // kUnknown when !is_branch. kFarTransfer covers syscall/sysret/sysenter/sysexit, int/int3/
  // into, iret and far jmp/call/ret.
  BranchKind kind = BranchKind::kUnknown;
  bool has_direct_target = false;
  uint64_t direct_target = 0;  // valid when has_direct_target (rel8/rel32 jumps, calls, jcc)
  uint64_t address = 0;
  // An instruction hypervisors intercept and emulate (CPUID, RDTSC, RDRAND, SGDT, ...). Some
  // lose the single-step trap after emulating one: the step then stops one instruction late.
  bool may_be_emulated = false;

  uint64_t next() const { return address + length; }
};

// Decodes the instruction whose first byte is bytes[0], located at `address` (used to resolve
// relative targets). Errors: kCorrupt for bytes that are not a valid instruction, kTruncated
// when `bytes` ends inside the instruction. Thread-safe (no shared mutable state).
Result<X86Instruction> DecodeX86(std::span<const uint8_t> bytes, uint64_t address);

// Same, without the Result wrapper, for hot loops: returns false (and leaves *out untouched)
// when the bytes do not decode; `truncated` (optional) says whether more bytes might help.
bool DecodeX86Fast(const uint8_t* bytes, size_t size, uint64_t address, X86Instruction* out,
                   bool* truncated = nullptr);

}  // namespace pathprof::decoders
