// The interpreter's fast path: the integer instructions most code retires (FastOp, recognised
// at decode time), run inline in the interpreter's loop without the general dispatch of
// integer_ops.cc, which costs a table lookup and a call per instruction. The semantics
// are integer_ops.cc's, instruction for instruction (tests/emulator/fast_ops_test.cc runs both
// on the same states and requires the same results).
#pragma once

#include "integer_arithmetic.h"
#include "machine.h"

namespace pathprof::emulator {

[[gnu::always_inline]] inline Step ExecuteFast(Machine& m, const DecodedInstruction& d) {
  const Operand& dst = d.op[0];
  const Operand& src = d.op[1];
  uint64_t a = 0, b = 0, f = 0, r = 0;
  switch (d.fast) {
    case FastOp::kNop:
      return Step::kNext;
    case FastOp::kMov:
      if (!ReadInt(m, src, dst.size, &b)) return Step::kEnded;
      return WriteInt(m, dst, dst.size, b) ? Step::kNext : Step::kEnded;
    case FastOp::kMovzx:
    case FastOp::kMovsx:
      if (!ReadInt(m, src, src.size, &b)) return Step::kEnded;
      if (d.fast == FastOp::kMovsx) b = static_cast<uint64_t>(SignExtend(b, src.size));
      return WriteInt(m, dst, dst.size, b & SizeMask(dst.size)) ? Step::kNext : Step::kEnded;
    case FastOp::kLea: {
      MemRef mem = src.mem;
      mem.segment = 0;
      return WriteInt(m, dst, dst.size, EffectiveAddress(m, mem) & SizeMask(dst.size))
                 ? Step::kNext
                 : Step::kEnded;
    }
    case FastOp::kAdd:
    case FastOp::kSub:
    case FastOp::kCmp:
    case FastOp::kAnd:
    case FastOp::kOr:
    case FastOp::kXor:
    case FastOp::kTest: {
      const unsigned size = dst.size;
      if (!ReadInt(m, dst, size, &a) || !ReadInt(m, src, size, &b)) return Step::kEnded;
      switch (d.fast) {
        case FastOp::kAdd:
          r = Add(a, b, 0, size, &f);
          break;
        case FastOp::kSub:
        case FastOp::kCmp:
          r = Sub(a, b, 0, size, &f);
          break;
        case FastOp::kAnd:
        case FastOp::kTest:
          r = a & b, f = SzpFlags(r, size);
          break;
        case FastOp::kOr:
          r = a | b, f = SzpFlags(r, size);
          break;
        default:
          r = a ^ b, f = SzpFlags(r, size);
          break;
      }
      // The store first: one that faults ends the window with no trace of the instruction.
      if (d.fast != FastOp::kCmp && d.fast != FastOp::kTest && !WriteInt(m, dst, size, r))
        return Step::kEnded;
      SetFlags(m, kArithmeticFlags, f);
      return Step::kNext;
    }
    case FastOp::kInc:
    case FastOp::kDec: {
      const unsigned size = dst.size;
      if (!ReadInt(m, dst, size, &a)) return Step::kEnded;
      r = d.fast == FastOp::kInc ? Add(a, 1, 0, size, &f) : Sub(a, 1, 0, size, &f);
      if (!WriteInt(m, dst, size, r)) return Step::kEnded;
      SetFlags(m, kArithmeticFlags & ~kCF, f);
      return Step::kNext;
    }
    case FastOp::kPush:
      if (!ReadInt(m, dst, d.operand_size, &a)) return Step::kEnded;
      return Push(m, a, d.operand_size) ? Step::kNext : Step::kEnded;
    case FastOp::kPop:
      if (!Pop(m, &a, d.operand_size)) return Step::kEnded;
      return WriteInt(m, dst, d.operand_size, a) ? Step::kNext : Step::kEnded;
    case FastOp::kJcc:
      m.taken = Condition(m.s.rflags, d.condition);
      m.s.rip = m.taken ? d.branch.direct_target : m.next_rip;
      return Step::kJump;
    case FastOp::kJmp:
    case FastOp::kCall: {
      uint64_t target = d.branch.direct_target;
      if (!d.branch.has_direct_target && !ReadInt(m, dst, 8, &target)) return Step::kEnded;
      if (d.fast == FastOp::kCall && !Push(m, m.next_rip, 8)) return Step::kEnded;
      m.s.rip = target;
      m.taken = true;
      return Step::kJump;
    }
    case FastOp::kRet:
      if (!Pop(m, &a, 8)) return Step::kEnded;
      m.s.rip = a;
      m.taken = true;
      return Step::kJump;
    case FastOp::kNone:
      break;
  }
  return Step::kNotMine;
}

}  // namespace pathprof::emulator
