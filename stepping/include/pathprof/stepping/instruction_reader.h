// Reads and decodes the instructions of a live process by address (/proc/PID/mem or
// process_vm_readv), with a cache: what the tracers and the burst collector step through.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <unordered_map>

#include "pathprof/decoders/x86_branch.h"

namespace pathprof::stepping {

class SoftwareBreakpoints;

// Decodes instructions of one process by address, with a cache (text is assumed not to change
// under us; call Reset after exec, which replaces the images).
class InstructionReader {
 public:
  explicit InstructionReader(pid_t pid) : pid_(pid) {}
  ~InstructionReader();
  InstructionReader(const InstructionReader&) = delete;
  InstructionReader& operator=(const InstructionReader&) = delete;

  // The instruction at ip, or nullptr when its bytes are unreadable or do not decode (counted in
  // failures()). The pointer stays valid until Reset.
  const decoders::X86Instruction* At(uint64_t ip);
  // The raw bytes at ip (one instruction's worth), read from the live process, uncached; empty
  // when unreadable. Valid until the next call.
  std::span<const uint8_t> Bytes(uint64_t ip);
  void Reset();
  uint64_t failures() const { return failures_; }
  // Bytes read from the live process show our own int3s where they are planted: with this set,
  // the original bytes are put back in what the reader decodes and returns.
  void SetBreakpoints(const SoftwareBreakpoints* breakpoints) { breakpoints_ = breakpoints; }

 private:
  pid_t pid_;
  const SoftwareBreakpoints* breakpoints_ = nullptr;
  int mem_fd_ = -1;
  uint8_t buf_[decoders::kX86MaxInstructionLength + 1];
  uint64_t failures_ = 0;
  std::unordered_map<uint64_t, decoders::X86Instruction> cache_;
};

}  // namespace pathprof::stepping
