// Reads and decodes the instructions of a live process by address (/proc/PID/mem or
// process_vm_readv), with a cache: what the tracers and the burst collector step through.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

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
  // failures()). Decodes are kept: code in read-only private file mappings is trusted not to
  // change; anywhere else (JIT regions, memfds, writable code) the bytes are read again and a
  // decode of bytes that changed is replaced. The pointer stays valid until Reset (its contents
  // follow such a replacement).
  const decoders::X86Instruction* At(uint64_t ip);
  // The raw bytes at ip (one instruction's worth), read from the live process, uncached; empty
  // when unreadable. Valid until the next call.
  std::span<const uint8_t> Bytes(uint64_t ip);
  void Reset();
  uint64_t failures() const { return failures_; }
  uint64_t redecodes() const { return redecodes_; }  // changed code decoded again
  // Bytes read from the live process show our own int3s where they are planted: with this set,
  // the original bytes are put back in what the reader decodes and returns.
  void SetBreakpoints(const SoftwareBreakpoints* breakpoints) { breakpoints_ = breakpoints; }

 private:
  struct Entry {
    decoders::X86Instruction insn;
    std::array<uint8_t, decoders::kX86MaxInstructionLength> bytes{};
    bool stable = false;
  };
  // Whether the code at ip lies in a read-only private file mapping (the maps are read again
  // at most every 100 ms, and on a miss).
  bool StableCode(uint64_t ip);

  struct Range {
    uint64_t start, end;
    bool stable;
  };
  pid_t pid_;
  const SoftwareBreakpoints* breakpoints_ = nullptr;
  int mem_fd_ = -1;
  uint8_t buf_[decoders::kX86MaxInstructionLength + 1];
  uint64_t failures_ = 0;
  uint64_t redecodes_ = 0;
  std::unordered_map<uint64_t, Entry> cache_;
  std::vector<Range> ranges_;  // sorted
  uint64_t ranges_read_ns_ = 0;
};

}  // namespace pathprof::stepping
