// This thread's registers and the top of its stack at one instruction, as the stack sampler
// delivers them to an unwinder (decoders::CfiUnwinder, SymbolService::UnwindUser).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/cfi_unwinder.h"

namespace pathprof::testing {

struct CapturedStack {
  std::vector<uint64_t> regs = std::vector<uint64_t>(decoders::kDwarfRegisterCount, 0);
  uint64_t stack_start = 0;
  std::vector<uint8_t> stack;  // empty: the copy failed
};

// Up to 16 KiB from `sp`, copied with pread on /proc/self/mem: the sanitizer would report
// reading other frames' redzones with memcpy, and the kernel reads the stack as the sampler's
// bpf_probe_read_user does.
inline void CopyStackFrom(uint64_t sp, CapturedStack* c) {
  auto space = decoders::ReadProcMaps(getpid());
  const decoders::Mapping* m = space.ok() ? space->Find(sp) : nullptr;
  if (m == nullptr) return;
  const uint64_t n = std::min<uint64_t>(16384, m->end() - sp);
  const int fd = procfs::Procfs::Host().Open(getpid(), "mem", O_RDONLY);
  if (fd < 0) return;
  std::vector<uint8_t> bytes(n);
  if (pread(fd, bytes.data(), n, static_cast<off_t>(sp)) == static_cast<ssize_t>(n)) {
    c->stack = std::move(bytes);
    c->stack_start = sp;
  }
  close(fd);
}

// The caller's state at the asm block: rip, rsp and the callee-saved registers are read at the
// same instruction. No frame pointer of its own, so only CFI finds its caller.
__attribute__((noinline, optimize("omit-frame-pointer"))) inline void CaptureStackHere(
    CapturedStack* c) {
  uint64_t rsp = 0, rbp = 0, rip = 0, rbx = 0, r12 = 0, r13 = 0, r14 = 0, r15 = 0;
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2\n\t"
      "mov %%rbx, %3\n\t"
      "mov %%r12, %4\n\t"
      "mov %%r13, %5\n\t"
      "mov %%r14, %6\n\t"
      "mov %%r15, %7\n\t"
      : "=&r"(rip), "=&r"(rsp), "=&r"(rbp), "=&r"(rbx), "=&r"(r12), "=&r"(r13), "=&r"(r14),
        "=&r"(r15));
  c->regs[decoders::kDwarfRip] = rip;
  c->regs[decoders::kDwarfRsp] = rsp;
  c->regs[decoders::kDwarfRbp] = rbp;
  c->regs[3] = rbx;
  c->regs[12] = r12;
  c->regs[13] = r13;
  c->regs[14] = r14;
  c->regs[15] = r15;
  CopyStackFrom(rsp, c);
}

}  // namespace pathprof::testing
