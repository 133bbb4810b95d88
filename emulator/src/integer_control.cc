// The stack and control flow: push, pop, leave, call, ret, jmp, jrcxz, loop, and the
// instructions of a condition code (jcc, setcc, cmovcc); and the instructions that read state a
// window cannot have (cpuid, rdtsc, xsave, ...), which end it.
#include <Zydis/Zydis.h>

#include "integer_arithmetic.h"
#include "integer_handlers.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

// The target of a jump or call: the decoded relative target, or the register/memory operand.
bool BranchTarget(Machine& m, const DecodedInstruction& d, uint64_t* target) {
  if (d.branch.has_direct_target) {
    *target = d.branch.direct_target;
    return true;
  }
  return ReadInt(m, d.op[0], 8, target);
}

Step PushOp(Machine& m, const DecodedInstruction& d) {
  uint64_t v = 0;
  if (!ReadInt(m, d.op[0], d.operand_size, &v)) return Step::kEnded;
  return Push(m, v, d.operand_size) ? Step::kNext : Step::kEnded;
}

Step PopOp(Machine& m, const DecodedInstruction& d) {
  // A memory destination is addressed with rsp already incremented; a store there that
  // faults leaves rsp as it was.
  const uint64_t rsp = m.s.gpr[kRsp];
  uint64_t v = 0;
  if (!Pop(m, &v, d.operand_size)) return Step::kEnded;
  if (WriteInt(m, d.op[0], d.operand_size, v)) return Step::kNext;
  m.s.gpr[kRsp] = rsp;
  return Step::kEnded;
}

Step PushFlags(Machine& m, const DecodedInstruction&) {
  return Push(m, m.s.rflags & ~0x30000ull, 8) ? Step::kNext : Step::kEnded;
}

Step Leave(Machine& m, const DecodedInstruction&) {
  const uint64_t rsp = m.s.gpr[kRsp];
  m.s.gpr[kRsp] = m.s.gpr[kRbp];
  uint64_t v = 0;
  if (!Pop(m, &v, 8)) {
    m.s.gpr[kRsp] = rsp;  // the frame was unreadable: the CPU faults with rsp unchanged
    return Step::kEnded;
  }
  m.s.gpr[kRbp] = v;
  return Step::kNext;
}

Step Call(Machine& m, const DecodedInstruction& d) {
  uint64_t target = 0;
  if (!BranchTarget(m, d, &target) || !Push(m, m.next_rip, 8)) return Step::kEnded;
  m.s.rip = target;
  m.taken = true;
  return Step::kJump;
}

Step Return(Machine& m, const DecodedInstruction& d) {
  uint64_t target = 0;
  if (!Pop(m, &target, 8)) return Step::kEnded;
  if (d.operand_count > 0 && d.op[0].type == OperandType::kImmediate)
    m.s.gpr[kRsp] += d.op[0].imm & 0xffff;
  m.s.rip = target;
  m.taken = true;
  return Step::kJump;
}

Step Jump(Machine& m, const DecodedInstruction& d) {
  uint64_t target = 0;
  if (!BranchTarget(m, d, &target)) return Step::kEnded;
  m.s.rip = target;
  m.taken = true;
  return Step::kJump;
}

// jrcxz (kCountSize 8), jecxz (4).
template <unsigned kCountSize>
Step JumpIfCountZero(Machine& m, const DecodedInstruction& d) {
  const uint64_t rcx = m.s.gpr[kRcx] & SizeMask(kCountSize);
  m.taken = rcx == 0;
  m.s.rip = m.taken ? d.branch.direct_target : m.next_rip;
  return Step::kJump;
}

enum class LoopKind : uint8_t { kAlways, kWhileZero, kWhileNotZero };

// loop, loope, loopne.
template <LoopKind kKind>
Step Loop(Machine& m, const DecodedInstruction& d) {
  const uint64_t rcx = --m.s.gpr[kRcx];
  bool go = rcx != 0;
  if (kKind == LoopKind::kWhileZero) go = go && (m.s.rflags & kZF);
  if (kKind == LoopKind::kWhileNotZero) go = go && !(m.s.rflags & kZF);
  m.taken = go;
  m.s.rip = go ? d.branch.direct_target : m.next_rip;
  return Step::kJump;
}

// jcc, setcc and cmovcc: every mnemonic with a condition code (ConditionOf).
Step Conditional(Machine& m, const DecodedInstruction& d) {
  const int cc = ConditionOf(static_cast<ZydisMnemonic>(d.mnemonic));
  const bool holds = Condition(m.s.rflags, static_cast<unsigned>(cc));
  if (d.branch.is_branch) {  // jcc
    m.taken = holds;
    m.s.rip = m.taken ? d.branch.direct_target : m.next_rip;
    return Step::kJump;
  }
  if (d.op[0].size == 1 && d.operand_count == 1)  // setcc
    return WriteInt(m, d.op[0], 1, holds ? 1 : 0) ? Step::kNext : Step::kEnded;
  // cmovcc: the source is read (a bad address faults) either way; a 32-bit destination is
  // zero-extended even when the condition fails.
  uint64_t v = 0, old = 0;
  const unsigned s = d.op[0].size;
  if (!ReadInt(m, d.op[1], s, &v) || !ReadInt(m, d.op[0], s, &old)) return Step::kEnded;
  return WriteInt(m, d.op[0], s, holds ? v : old) ? Step::kNext : Step::kEnded;
}

Step HiddenState(Machine& m, const DecodedInstruction&) {
  return m.End(EmulationEnd::kHiddenState);
}

}  // namespace

void AddIntegerControlOps(IntegerHandlers& t) {
  for (int mn = 0; mn <= ZYDIS_MNEMONIC_MAX_VALUE; ++mn)
    if (ConditionOf(static_cast<ZydisMnemonic>(mn)) >= 0)
      t.Add({static_cast<ZydisMnemonic>(mn)}, Conditional);
  t.Add({ZYDIS_MNEMONIC_PUSH}, PushOp);
  t.Add({ZYDIS_MNEMONIC_POP}, PopOp);
  t.Add({ZYDIS_MNEMONIC_PUSHFQ}, PushFlags);
  t.Add({ZYDIS_MNEMONIC_LEAVE}, Leave);
  t.Add({ZYDIS_MNEMONIC_CALL}, Call);
  t.Add({ZYDIS_MNEMONIC_RET}, Return);
  t.Add({ZYDIS_MNEMONIC_JMP}, Jump);
  t.Add({ZYDIS_MNEMONIC_JRCXZ}, JumpIfCountZero<8>);
  t.Add({ZYDIS_MNEMONIC_JECXZ}, JumpIfCountZero<4>);
  t.Add({ZYDIS_MNEMONIC_LOOP}, Loop<LoopKind::kAlways>);
  t.Add({ZYDIS_MNEMONIC_LOOPE}, Loop<LoopKind::kWhileZero>);
  t.Add({ZYDIS_MNEMONIC_LOOPNE}, Loop<LoopKind::kWhileNotZero>);
  // State a window cannot reproduce (the time stamp counter, CPUID's answers, extended state
  // in memory, the segment bases): the window ends before them.
  t.Add({ZYDIS_MNEMONIC_CPUID, ZYDIS_MNEMONIC_RDTSC, ZYDIS_MNEMONIC_RDTSCP, ZYDIS_MNEMONIC_XGETBV,
         ZYDIS_MNEMONIC_RDRAND, ZYDIS_MNEMONIC_RDSEED, ZYDIS_MNEMONIC_RDPID, ZYDIS_MNEMONIC_RDPMC,
         ZYDIS_MNEMONIC_RDPKRU, ZYDIS_MNEMONIC_XSAVE, ZYDIS_MNEMONIC_XSAVEC,
         ZYDIS_MNEMONIC_XSAVEOPT, ZYDIS_MNEMONIC_XRSTOR, ZYDIS_MNEMONIC_FXSAVE,
         ZYDIS_MNEMONIC_FXRSTOR, ZYDIS_MNEMONIC_RDFSBASE, ZYDIS_MNEMONIC_RDGSBASE,
         ZYDIS_MNEMONIC_WRFSBASE, ZYDIS_MNEMONIC_WRGSBASE},
        HiddenState);
}

}  // namespace pathprof::emulator
