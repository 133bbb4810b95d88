// One single step of a stopped thread, classified: given the instruction that was about to run
// and the thread's rip after one PTRACE_SINGLESTEP, say whether a branch retired and which.
// Shared by ptrace-based sources (the burst collector; the exact tracer does the same inline).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "interrupted_syscall.h"
#include "pathprof/core/branch.h"
#include "pathprof/decoders/x86_branch.h"
#include "pathprof/stepping/instruction_reader.h"

namespace pathprof::stepping {

enum class StepResult : uint8_t {
  kRetired,     // a non-branch instruction retired and control fell through
  kBranch,      // a branch retired: `event` holds it
  kRepeat,      // a REP string instruction iterated (it retires once, at the end)
  kUnexpected,  // a non-branch instruction did not reach its successor (fault, signal)
};

struct ClassifiedStep {
  StepResult result = StepResult::kRetired;
  BranchEvent event;  // for kBranch and kUnexpected (as a far transfer); instructions left 0
};

// `pending` is the instruction that was at rip before the step, `rip` the thread's rip after.
ClassifiedStep ClassifyStep(const decoders::X86Instruction& pending, uint64_t rip);

// Some hypervisors drop the single-step trap after an instruction they emulate (CPUID at
// least): the step stops one instruction (or more) late. When a step from the non-branch
// `pending` lands at `rip` instead of pending.next(), this finds the instructions that ran in
// between by decoding forward from pending.next(), both ways at each conditional, up to
// `max_extra` instructions. On success `out` holds one ClassifiedStep per extra instruction, in
// order (kRetired or kBranch). An indirect branch or return can only end such a chain when
// `pending` is one a hypervisor emulates (its target is then taken to be rip). False when no
// chain explains rip: a real unexplained transfer (signal handler, fault).
bool ResolveLostTraps(InstructionReader& reader, const decoders::X86Instruction& pending,
                      uint64_t rip, int max_extra, std::vector<ClassifiedStep>* out);

// Reads the instruction pointer, the flags and, for a thread stopped by PTRACE_INTERRUPT,
// whether it was stopped inside a system call (interrupted_syscall.h).
struct StoppedThreadState {
  uint64_t rip = 0;
  uint64_t rflags = 0;
  SyscallAtStop syscall = SyscallAtStop::kNone;
};
bool ReadStoppedThread(pid_t tid, StoppedThreadState* out);

}  // namespace pathprof::stepping
