// Ground truth for the emulator's branch events: a forked copy of this test process runs a
// function natively under PTRACE_SINGLESTEP, from the same start state the emulator gets, and
// reports every branch it retired in the emulator's form (not-taken conditionals included).
// The child shares nothing with the parent after fork: inputs prepared later must be copied
// into it (Mirror), and the memory it runs on (buffers, stack) must have been mapped before
// the fork.
#pragma once

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pathprof/decoders/x86_branch.h"
#include "pathprof/emulator/window_emulator.h"
#include "self_guest.h"

namespace pathprof::emulator::testing {

class NativeTracer {
 public:
  struct Result {
    bool ok = false;
    std::string error;
    std::vector<BranchEvent> events;
    uint64_t instructions = 0;
    uint64_t rax = 0;
    uint64_t rdx = 0;
    std::array<uint8_t, 16> xmm0{};
    uint32_t mxcsr = 0;
    int signal = 0;           // a signal other than the single-step trap stopped the run...
    uint64_t signal_rip = 0;  // ...at the instruction at this address
  };

  NativeTracer() {
    child_ = fork();
    if (child_ == 0) {
      ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      raise(SIGSTOP);
      for (;;) pause();  // never resumed here: the parent moves rip elsewhere
    }
    int status = 0;
    ok_ = child_ > 0 && waitpid(child_, &status, 0) == child_ && WIFSTOPPED(status);
  }
  ~NativeTracer() {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      int status = 0;
      waitpid(child_, &status, 0);
    }
  }
  NativeTracer(const NativeTracer&) = delete;
  NativeTracer& operator=(const NativeTracer&) = delete;

  bool ok() const { return ok_; }

  // Copies [address, address + size) of this process into the child.
  bool Mirror(const void* address, size_t size) {
    iovec local{const_cast<void*>(address), size};
    iovec remote{const_cast<void*>(address), size};
    return process_vm_writev(child_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
  }
  // Reads the child's memory (what its native run stored).
  bool Read(const void* address, void* out, size_t size) {
    iovec local{out, size};
    iovec remote{const_cast<void*>(address), size};
    return process_vm_readv(child_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
  }

  // Runs from `start` (general registers, rip, xmm0-15's low 128 bits, mxcsr) until it
  // returns to kReturnSentinel.
  Result Run(const CpuState& start, uint64_t max_steps = 2'000'000) {
    Result r;
    if (!ok_) return Fail(r, "no traced child");
    user_regs_struct regs{};
    user_fpregs_struct fp{};
    if (ptrace(PTRACE_GETREGS, child_, nullptr, &regs) != 0 ||
        ptrace(PTRACE_GETFPREGS, child_, nullptr, &fp) != 0)
      return Fail(r, "cannot read the child's registers");
    unsigned long long* const order[16] = {
        &regs.rax, &regs.rcx, &regs.rdx, &regs.rbx, &regs.rsp, &regs.rbp, &regs.rsi, &regs.rdi,
        &regs.r8,  &regs.r9,  &regs.r10, &regs.r11, &regs.r12, &regs.r13, &regs.r14, &regs.r15};
    for (int i = 0; i < 16; ++i) *order[i] = start.gpr[i];
    regs.rip = start.rip;
    regs.eflags = start.rflags;
    for (int i = 0; i < 16; ++i) std::memcpy(&fp.xmm_space[i * 4], start.zmm[i].data(), 16);
    fp.mxcsr = start.mxcsr;
    if (ptrace(PTRACE_SETREGS, child_, nullptr, &regs) != 0 ||
        ptrace(PTRACE_SETFPREGS, child_, nullptr, &fp) != 0)
      return Fail(r, "cannot set the child's registers");
    uint32_t since_event = 0;
    for (uint64_t step = 0; step < max_steps; ++step) {
      const uint64_t rip = regs.rip;
      if (rip == kReturnSentinel) {
        if (ptrace(PTRACE_GETFPREGS, child_, nullptr, &fp) != 0)
          return Fail(r, "cannot read the child's registers");
        r.ok = true;
        r.rax = regs.rax;
        r.rdx = regs.rdx;
        std::memcpy(r.xmm0.data(), &fp.xmm_space[0], 16);
        r.mxcsr = fp.mxcsr;
        return r;
      }
      uint8_t bytes[decoders::kX86MaxInstructionLength] = {};
      size_t got = ReadCode(rip, bytes);
      decoders::X86Instruction insn;
      if (got == 0 || !decoders::DecodeX86Fast(bytes, got, rip, &insn))
        return Fail(r, "cannot decode at " + std::to_string(rip));
      int status = 0;
      if (ptrace(PTRACE_SINGLESTEP, child_, nullptr, nullptr) != 0 ||
          waitpid(child_, &status, 0) != child_)
        return Fail(r, "single step failed");
      if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
        r.signal = WIFSTOPPED(status) ? WSTOPSIG(status) : -1;
        r.signal_rip = rip;
        return Fail(r, "the child stopped with signal " + std::to_string(r.signal) + " at " +
                           std::to_string(rip));
      }
      if (ptrace(PTRACE_GETREGS, child_, nullptr, &regs) != 0)
        return Fail(r, "cannot read the child's registers");
      // A REP string instruction traps after each iteration with rip unchanged; it retires
      // (and the emulator counts it) once.
      if (!insn.is_branch && regs.rip == rip) continue;
      ++r.instructions;
      ++since_event;
      if (!insn.is_branch) continue;
      BranchEvent e;
      e.from = rip;
      e.kind = insn.kind;
      e.taken = insn.kind != BranchKind::kConditional || regs.rip != insn.next();
      e.to = e.taken ? regs.rip : insn.next();
      e.instructions = static_cast<uint16_t>(since_event < 0xffff ? since_event : 0xffff);
      since_event = 0;
      r.events.push_back(e);
    }
    return Fail(r, "step limit");
  }

 private:
  static Result Fail(Result& r, std::string why) {
    r.ok = false;
    r.error = std::move(why);
    return r;
  }
  // The code is the same in both processes; read it through process_vm_readv so that an
  // instruction near the end of a mapping does not fault here.
  static size_t ReadCode(uint64_t rip, uint8_t* out) {
    for (size_t n = decoders::kX86MaxInstructionLength; n > 0; --n) {
      iovec local{out, n};
      iovec remote{reinterpret_cast<void*>(rip), n};
      if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n)) return n;
    }
    return 0;
  }

  pid_t child_ = -1;
  bool ok_ = false;
};

}  // namespace pathprof::emulator::testing
