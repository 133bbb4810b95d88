#include "step_classifier.h"

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <string>

#include "software_breakpoints.h"

namespace pathprof::stepping {

ClassifiedStep ClassifyStep(const decoders::X86Instruction& pending, uint64_t rip) {
  ClassifiedStep out;
  const uint64_t p = pending.address;
  if (rip == p && !pending.is_branch) {
    out.result = StepResult::kRepeat;
    return out;
  }
  const uint64_t next = pending.next();
  if (pending.is_branch) {
    out.result = StepResult::kBranch;
    out.event.from = p;
    out.event.to = rip;
    out.event.kind = pending.kind;
    out.event.taken = pending.kind == BranchKind::kConditional ? rip != next : true;
    return out;
  }
  if (rip != next) {
    out.result = StepResult::kUnexpected;
    out.event.from = p;
    out.event.to = rip;
    out.event.kind = BranchKind::kFarTransfer;
    out.event.taken = true;
    return out;
  }
  return out;
}

namespace {

bool SearchLostTraps(InstructionReader& reader, uint64_t pos, uint64_t rip, int depth_left,
                     bool allow_indirect, std::vector<ClassifiedStep>* path) {
  const decoders::X86Instruction* insn = reader.At(pos);
  if (insn == nullptr || depth_left <= 0) return false;
  if (!insn->is_branch) {
    path->push_back(ClassifiedStep{});  // kRetired
    if (insn->next() == rip ||
        SearchLostTraps(reader, insn->next(), rip, depth_left - 1, allow_indirect, path))
      return true;
    path->pop_back();
    return false;
  }
  if (insn->kind == BranchKind::kFarTransfer) return false;  // a syscall ends any step
  auto try_target = [&](uint64_t to, bool taken) {
    ClassifiedStep step;
    step.result = StepResult::kBranch;
    step.event.from = insn->address;
    step.event.to = to;
    step.event.kind = insn->kind;
    step.event.taken = taken;
    path->push_back(step);
    if (to == rip || SearchLostTraps(reader, to, rip, depth_left - 1, allow_indirect, path))
      return true;
    path->pop_back();
    return false;
  };
  if (insn->kind == BranchKind::kConditional)
    return try_target(insn->next(), false) ||
           (insn->has_direct_target && try_target(insn->direct_target, true));
  if (insn->has_direct_target) return try_target(insn->direct_target, true);
  // Indirect jump, indirect call or return: its target is unknowable here, so it may only be
  // the last instruction of the chain, landing where the thread stopped.
  if (!allow_indirect) return false;
  ClassifiedStep step;
  step.result = StepResult::kBranch;
  step.event.from = insn->address;
  step.event.to = rip;
  step.event.kind = insn->kind;
  step.event.taken = true;
  path->push_back(step);
  return true;
}

}  // namespace

bool ResolveLostTraps(InstructionReader& reader, const decoders::X86Instruction& pending,
                      uint64_t rip, int max_extra, std::vector<ClassifiedStep>* out) {
  out->clear();
  if (pending.is_branch || rip == pending.next() || rip == pending.address) return false;
  return SearchLostTraps(reader, pending.next(), rip, max_extra, pending.may_be_emulated, out);
}

bool ReadStoppedThread(pid_t tid, StoppedThreadState* out) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return false;
  out->rip = regs.rip;
  out->rflags = regs.eflags;
  out->syscall = ClassifySyscallAtStop(regs);
  return true;
}

}  // namespace pathprof::stepping
