// A Guest over this test process's own memory (process_vm_readv on itself: an unmapped page
// reads as unreadable instead of faulting), and a way to run one of its functions in the
// emulator as a call: arguments in registers, a private stack, a return to an unmapped
// sentinel address where the window ends.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/emulator/window_emulator.h"

namespace pathprof::emulator::testing {

class SelfGuest : public Guest {
 public:
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    ++reads;
    iovec local{out, kPageSize};
    iovec remote{reinterpret_cast<void*>(page), kPageSize};
    *stable = false;
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(kPageSize);
  }
  // As the CPU sees it: a page of a mapping without write permission (/proc/self/maps) faults
  // on a store, so the window must end there.
  bool PageWritable(uint64_t page) override {
    auto maps = procfs::Procfs::Host().Read(getpid(), "maps");
    if (!maps.ok()) return false;
    std::istringstream lines(*maps);
    for (std::string line; std::getline(lines, line);) {
      unsigned long long start = 0, end = 0;
      char perms[5] = {};
      if (std::sscanf(line.c_str(), "%llx-%llx %4s", &start, &end, perms) != 3) continue;
      if (page >= start && page < end) return perms[1] == 'w';
    }
    return false;
  }
  bool LoadVectorState(CpuState* state) override {
    state->vector_loaded = true;  // the tests give vector inputs in the start state
    return true;
  }
  uint64_t reads = 0;
};

inline constexpr uint64_t kReturnSentinel = 0x10;  // page 0 is never mapped

// The start state of a call fn(a0, a1, a2) with its own 64 KiB stack.
struct Call {
  explicit Call(const void* fn, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0)
      : stack(64 * 1024 / 8) {
    uint64_t top = reinterpret_cast<uint64_t>(stack.data() + stack.size() - 16) & ~15ull;
    top -= 8;
    std::memcpy(reinterpret_cast<void*>(top), &kReturnSentinel, 8);
    state.gpr[kRsp] = top;
    state.gpr[kRdi] = a0;
    state.gpr[kRsi] = a1;
    state.gpr[kRdx] = a2;
    state.rip = reinterpret_cast<uint64_t>(fn);
  }
  std::vector<uint64_t> stack;
  CpuState state;
};

}  // namespace pathprof::emulator::testing
