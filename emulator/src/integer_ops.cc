// Integer instructions: moves, arithmetic and logic with their flags, stack and control flow,
// string instructions; shifts, multiplies, divides, bit scans and tests, whose flags the SDM
// leaves partly undefined, run on this CPU (integer_host_flags.cc). Where a window ends at an
// instruction, the instruction leaves no trace: memory accesses that can fail come before any
// register or flag changes.
#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "host_integer.h"
#include "integer_arithmetic.h"
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

// Binary ALU operations of the form dst = dst OP src.
Step Alu(Machine& m, const DecodedInstruction& d, ZydisMnemonic mn) {
  const unsigned size = d.op[0].size;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[0], size, &a) || !ReadInt(m, d.op[1], size, &b)) return Step::kEnded;
  uint64_t r = 0, f = 0;
  const uint64_t cf = (m.s.rflags & kCF) ? 1 : 0;
  bool write = true;
  switch (mn) {
    case ZYDIS_MNEMONIC_ADD:
      r = Add(a, b, 0, size, &f);
      break;
    case ZYDIS_MNEMONIC_ADC:
      r = Add(a, b, cf, size, &f);
      break;
    case ZYDIS_MNEMONIC_SUB:
      r = Sub(a, b, 0, size, &f);
      break;
    case ZYDIS_MNEMONIC_SBB:
      r = Sub(a, b, cf, size, &f);
      break;
    case ZYDIS_MNEMONIC_CMP:
      r = Sub(a, b, 0, size, &f);
      write = false;
      break;
    // Logic: CF = OF = 0; AF is undefined and cleared, as Intel and AMD cores do.
    case ZYDIS_MNEMONIC_AND:
      r = a & b;
      f = SzpFlags(r, size);
      break;
    case ZYDIS_MNEMONIC_TEST:
      r = a & b;
      f = SzpFlags(r, size);
      write = false;
      break;
    case ZYDIS_MNEMONIC_OR:
      r = a | b;
      f = SzpFlags(r, size);
      break;
    case ZYDIS_MNEMONIC_XOR:
      r = a ^ b;
      f = SzpFlags(r, size);
      break;
    default:
      return Step::kNotMine;
  }
  // A store that faults ends the window with the flags untouched, as the CPU leaves them.
  if (write && !WriteInt(m, d.op[0], size, r)) return Step::kEnded;
  SetFlags(m, kArithmeticFlags, f);
  return Step::kNext;
}

// Forward rep movs / rep stos over the part of the operands that lies within one page each: a
// page-sized memcpy or fill instead of an overlay access per element (glibc's memcpy and memset
// use them for large sizes; element by element they were most of the emulator's time on zstd).
// Returns the elements done; 0 where the next element crosses a page, or where a forward copy
// would read bytes it has just written (*overlapping set: the caller then runs the rest one
// element at a time). *st is not kOk where the first element's access fails, as it would one
// element at a time.
uint64_t BulkStringElements(Machine& m, bool movs, unsigned size, uint64_t max_elements,
                            MemoryStatus* st, bool* overlapping) {
  const size_t want = max_elements * size;
  const uint8_t* src = nullptr;
  size_t src_bytes = want;
  // The source first, as the element loop reads before it writes (the same status on failure).
  if (movs &&
      (*st = m.memory->ReadableSpan(m.s.gpr[kRsi], want, &src, &src_bytes)) != MemoryStatus::kOk)
    return 0;
  uint8_t* dst = nullptr;
  size_t dst_bytes = 0;
  if ((*st = m.memory->WritableSpan(m.s.gpr[kRdi], src_bytes, &dst, &dst_bytes)) !=
      MemoryStatus::kOk)
    return 0;
  if (movs) {
    // Read again: making the destination writable may have copied the source's page.
    if ((*st = m.memory->ReadableSpan(m.s.gpr[kRsi], dst_bytes, &src, &src_bytes)) !=
        MemoryStatus::kOk)
      return 0;
  }
  const uint64_t n = std::min(src_bytes, dst_bytes) / size;
  if (n == 0) return 0;
  const size_t bytes = n * size;
  if (movs) {
    const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (d > s && d < s + bytes) {  // element order shows: not a memmove
      *overlapping = true;
      return 0;
    }
    std::memmove(dst, src, bytes);
    m.s.gpr[kRsi] += bytes;
  } else {
    const uint64_t v = m.s.gpr[kRax];
    if (size == 1) {
      std::memset(dst, static_cast<uint8_t>(v), bytes);
    } else {
      for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * size, &v, size);
    }
  }
  m.s.gpr[kRdi] += bytes;
  m.s.gpr[kRcx] -= n;
  return n;
}

// movs, stos, lods, cmps, scas with their REP prefixes: every iteration is emulated; the
// instruction retires once (as the stepper counts it). When the window ends at one (an
// iteration would fault, or too many of them), it ends before the instruction: rax, rcx, rsi,
// rdi and the flags go back to what they were, as the stepped thread has them there.
Step StringOp(Machine& m, const DecodedInstruction& d, ZydisMnemonic mn, unsigned size) {
  const std::array<uint64_t, 4> before = {m.s.gpr[kRax], m.s.gpr[kRcx], m.s.gpr[kRsi],
                                          m.s.gpr[kRdi]};
  const uint64_t flags_before = m.s.rflags;
  const auto end = [&](EmulationEnd why) {
    m.s.gpr[kRax] = before[0];
    m.s.gpr[kRcx] = before[1];
    m.s.gpr[kRsi] = before[2];
    m.s.gpr[kRdi] = before[3];
    m.s.rflags = flags_before;
    return m.End(why);
  };
  const bool counted = d.rep || d.repne;
  const int64_t step = (m.s.rflags & kDF) ? -static_cast<int64_t>(size) : size;
  const bool compares = mn == ZYDIS_MNEMONIC_CMPSB || mn == ZYDIS_MNEMONIC_CMPSW ||
                        mn == ZYDIS_MNEMONIC_CMPSD || mn == ZYDIS_MNEMONIC_CMPSQ ||
                        mn == ZYDIS_MNEMONIC_SCASB || mn == ZYDIS_MNEMONIC_SCASW ||
                        mn == ZYDIS_MNEMONIC_SCASD || mn == ZYDIS_MNEMONIC_SCASQ;
  const RegRef acc{RegClass::kGpr, kRax, static_cast<uint8_t>(size), 0};
  const bool movs = mn == ZYDIS_MNEMONIC_MOVSB || mn == ZYDIS_MNEMONIC_MOVSW ||
                    mn == ZYDIS_MNEMONIC_MOVSD || mn == ZYDIS_MNEMONIC_MOVSQ;
  const bool stos = mn == ZYDIS_MNEMONIC_STOSB || mn == ZYDIS_MNEMONIC_STOSW ||
                    mn == ZYDIS_MNEMONIC_STOSD || mn == ZYDIS_MNEMONIC_STOSQ;
  bool bulk = counted && (movs || stos) && !(m.s.rflags & kDF);
  constexpr uint64_t kMaxIterations = (1u << 20) + 1;  // then the window ends
  for (uint64_t iterations = 0;; ++iterations) {
    if (counted && m.s.gpr[kRcx] == 0) break;
    if (iterations >= kMaxIterations) return end(EmulationEnd::kInstructionLimit);
    MemoryStatus st = MemoryStatus::kOk;
    if (bulk) {
      bool overlapping = false;
      const uint64_t done = BulkStringElements(
          m, movs, size, std::min<uint64_t>(m.s.gpr[kRcx], kMaxIterations - iterations), &st,
          &overlapping);
      if (overlapping) bulk = false;  // the distance stays: the next chunks would overlap too
      if (st != MemoryStatus::kOk) {
        m.MemoryEnd(st);
        return end(m.end);
      }
      if (done > 0) {
        iterations += done - 1;
        continue;
      }
    }
    uint64_t v = 0, w = 0;
    switch (mn) {
      case ZYDIS_MNEMONIC_MOVSB:
      case ZYDIS_MNEMONIC_MOVSW:
      case ZYDIS_MNEMONIC_MOVSD:
      case ZYDIS_MNEMONIC_MOVSQ:
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) st = m.memory->Write(m.s.gpr[kRdi], &v, size);
        m.s.gpr[kRsi] += step;
        m.s.gpr[kRdi] += step;
        break;
      case ZYDIS_MNEMONIC_STOSB:
      case ZYDIS_MNEMONIC_STOSW:
      case ZYDIS_MNEMONIC_STOSD:
      case ZYDIS_MNEMONIC_STOSQ:
        v = ReadGpr(m, acc);
        st = m.memory->Write(m.s.gpr[kRdi], &v, size);
        m.s.gpr[kRdi] += step;
        break;
      case ZYDIS_MNEMONIC_LODSB:
      case ZYDIS_MNEMONIC_LODSW:
      case ZYDIS_MNEMONIC_LODSD:
      case ZYDIS_MNEMONIC_LODSQ:
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) WriteGpr(m, acc, v);
        m.s.gpr[kRsi] += step;
        break;
      case ZYDIS_MNEMONIC_CMPSB:
      case ZYDIS_MNEMONIC_CMPSW:
      case ZYDIS_MNEMONIC_CMPSD:
      case ZYDIS_MNEMONIC_CMPSQ: {
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) st = m.memory->Read(m.s.gpr[kRdi], &w, size);
        uint64_t f = 0;
        Sub(v, w, 0, size, &f);
        SetFlags(m, kArithmeticFlags, f);
        m.s.gpr[kRsi] += step;
        m.s.gpr[kRdi] += step;
        break;
      }
      default: {  // scas
        st = m.memory->Read(m.s.gpr[kRdi], &w, size);
        uint64_t f = 0;
        Sub(ReadGpr(m, acc), w, 0, size, &f);
        SetFlags(m, kArithmeticFlags, f);
        m.s.gpr[kRdi] += step;
        break;
      }
    }
    if (st != MemoryStatus::kOk) {
      m.MemoryEnd(st);
      return end(m.end);
    }
    if (!counted) break;
    --m.s.gpr[kRcx];
    if (compares && d.rep && !(m.s.rflags & kZF)) break;
    if (compares && d.repne && (m.s.rflags & kZF)) break;
  }
  return Step::kNext;
}

unsigned StringSize(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_MOVSB:
    case ZYDIS_MNEMONIC_STOSB:
    case ZYDIS_MNEMONIC_LODSB:
    case ZYDIS_MNEMONIC_CMPSB:
    case ZYDIS_MNEMONIC_SCASB:
      return 1;
    case ZYDIS_MNEMONIC_MOVSW:
    case ZYDIS_MNEMONIC_STOSW:
    case ZYDIS_MNEMONIC_LODSW:
    case ZYDIS_MNEMONIC_CMPSW:
    case ZYDIS_MNEMONIC_SCASW:
      return 2;
    case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_STOSD:
    case ZYDIS_MNEMONIC_LODSD:
    case ZYDIS_MNEMONIC_CMPSD:
    case ZYDIS_MNEMONIC_SCASD:
      return 4;
    case ZYDIS_MNEMONIC_MOVSQ:
    case ZYDIS_MNEMONIC_STOSQ:
    case ZYDIS_MNEMONIC_LODSQ:
    case ZYDIS_MNEMONIC_CMPSQ:
    case ZYDIS_MNEMONIC_SCASQ:
      return 8;
    default:
      return 0;
  }
}

// BMI2 shifts and rotate: three operands, no flags.
Step ThreeOperand(Machine& m, const DecodedInstruction& d, ZydisMnemonic mn) {
  const unsigned size = d.op[0].size;
  const unsigned bits = size * 8;
  uint64_t a = 0, b = 0;
  if (!ReadInt(m, d.op[1], size, &a) || !ReadInt(m, d.op[2], size, &b)) return Step::kEnded;
  const uint64_t mask = SizeMask(size);
  const unsigned c = static_cast<unsigned>(b & (bits - 1));
  uint64_t r = 0;
  switch (mn) {
    case ZYDIS_MNEMONIC_SHLX:
      r = (a << c) & mask;
      break;
    case ZYDIS_MNEMONIC_SHRX:
      r = a >> c;
      break;
    case ZYDIS_MNEMONIC_SARX:
      r = static_cast<uint64_t>(SignExtend(a, size) >> c) & mask;
      break;
    case ZYDIS_MNEMONIC_RORX: {
      const unsigned k = static_cast<unsigned>(b % bits);
      r = k == 0 ? a : ((a >> k) | (a << (bits - k))) & mask;
      break;
    }
    default:
      return Step::kNotMine;
  }
  return WriteInt(m, d.op[0], size, r) ? Step::kNext : Step::kEnded;
}

}  // namespace

Step ExecuteInteger(Machine& m, const DecodedInstruction& d) {
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const unsigned size = d.operand_size;
  switch (mn) {
    case ZYDIS_MNEMONIC_NOP:
    case ZYDIS_MNEMONIC_ENDBR64:
    case ZYDIS_MNEMONIC_PAUSE:
    case ZYDIS_MNEMONIC_LFENCE:
    case ZYDIS_MNEMONIC_SFENCE:
    case ZYDIS_MNEMONIC_MFENCE:
    case ZYDIS_MNEMONIC_PREFETCHT0:
    case ZYDIS_MNEMONIC_PREFETCHT1:
    case ZYDIS_MNEMONIC_PREFETCHT2:
    case ZYDIS_MNEMONIC_PREFETCHNTA:
    case ZYDIS_MNEMONIC_PREFETCHW:
      return Step::kNext;
    case ZYDIS_MNEMONIC_MOV:
      if (d.op[0].type == OperandType::kRegister && d.op[0].reg.cls != RegClass::kGpr)
        return Step::kNotMine;
      if (d.op[1].type == OperandType::kRegister && d.op[1].reg.cls != RegClass::kGpr)
        return Step::kNotMine;
      [[fallthrough]];
    case ZYDIS_MNEMONIC_MOVNTI: {
      uint64_t v = 0;
      if (!ReadInt(m, d.op[1], d.op[0].size, &v)) return Step::kEnded;
      return WriteInt(m, d.op[0], d.op[0].size, v) ? Step::kNext : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD: {
      uint64_t v = 0;
      const unsigned from = d.op[1].size;
      if (!ReadInt(m, d.op[1], from, &v)) return Step::kEnded;
      if (mn != ZYDIS_MNEMONIC_MOVZX) v = static_cast<uint64_t>(SignExtend(v, from));
      return WriteInt(m, d.op[0], d.op[0].size, v & SizeMask(d.op[0].size)) ? Step::kNext
                                                                            : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_LEA: {
      MemRef mem = d.op[1].mem;
      mem.segment = 0;
      return WriteInt(m, d.op[0], d.op[0].size, EffectiveAddress(m, mem) & SizeMask(d.op[0].size))
                 ? Step::kNext
                 : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_XCHG: {
      uint64_t a = 0, b = 0;
      const unsigned s = d.op[0].size;
      if (!ReadInt(m, d.op[0], s, &a) || !ReadInt(m, d.op[1], s, &b)) return Step::kEnded;
      // The memory operand (if any) first: a store that faults leaves the register as it was.
      const bool memory_first = d.op[1].type == OperandType::kMemory;
      const Operand& first = memory_first ? d.op[1] : d.op[0];
      const Operand& second = memory_first ? d.op[0] : d.op[1];
      if (!WriteInt(m, first, s, memory_first ? a : b) ||
          !WriteInt(m, second, s, memory_first ? b : a))
        return Step::kEnded;
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_BSWAP: {
      uint64_t v = 0;
      if (!ReadInt(m, d.op[0], size, &v)) return Step::kEnded;
      v = size == 8 ? __builtin_bswap64(v) : __builtin_bswap32(static_cast<uint32_t>(v));
      return WriteInt(m, d.op[0], size, v) ? Step::kNext : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_MOVBE: {
      // A load or a store with the bytes reversed (2, 4 or 8 of them); no flags. glibc's
      // memcmp and strstr variants for AVX2 and EVEX use it.
      const unsigned s = d.op[0].size;
      uint64_t v = 0;
      if (!ReadInt(m, d.op[1], s, &v)) return Step::kEnded;
      v = s == 8   ? __builtin_bswap64(v)
          : s == 4 ? __builtin_bswap32(static_cast<uint32_t>(v))
                   : __builtin_bswap16(static_cast<uint16_t>(v));
      return WriteInt(m, d.op[0], s, v) ? Step::kNext : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_ADC:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_SBB:
    case ZYDIS_MNEMONIC_CMP:
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_TEST:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
      return Alu(m, d, mn);
    case ZYDIS_MNEMONIC_INC:
    case ZYDIS_MNEMONIC_DEC: {
      const unsigned s = d.op[0].size;
      uint64_t a = 0, f = 0, r = 0;
      if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
      r = mn == ZYDIS_MNEMONIC_INC ? Add(a, 1, 0, s, &f) : Sub(a, 1, 0, s, &f);
      if (!WriteInt(m, d.op[0], s, r)) return Step::kEnded;
      SetFlags(m, kArithmeticFlags & ~kCF, f);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_NEG: {
      const unsigned s = d.op[0].size;
      uint64_t a = 0, f = 0;
      if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
      const uint64_t r = Sub(0, a, 0, s, &f);
      if (!WriteInt(m, d.op[0], s, r)) return Step::kEnded;
      SetFlags(m, kArithmeticFlags, f);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_NOT: {
      const unsigned s = d.op[0].size;
      uint64_t a = 0;
      if (!ReadInt(m, d.op[0], s, &a)) return Step::kEnded;
      return WriteInt(m, d.op[0], s, ~a & SizeMask(s)) ? Step::kNext : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL:
    case ZYDIS_MNEMONIC_ROR:
    case ZYDIS_MNEMONIC_RCL:
    case ZYDIS_MNEMONIC_RCR:
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD:
    case ZYDIS_MNEMONIC_MUL:
    case ZYDIS_MNEMONIC_IMUL:
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
    case ZYDIS_MNEMONIC_BT:
    case ZYDIS_MNEMONIC_BTS:
    case ZYDIS_MNEMONIC_BTR:
    case ZYDIS_MNEMONIC_BTC:
    case ZYDIS_MNEMONIC_BSF:
    case ZYDIS_MNEMONIC_BSR:
    case ZYDIS_MNEMONIC_TZCNT:
    case ZYDIS_MNEMONIC_LZCNT:
    case ZYDIS_MNEMONIC_POPCNT:
    case ZYDIS_MNEMONIC_ANDN:
    case ZYDIS_MNEMONIC_BZHI:
    case ZYDIS_MNEMONIC_BEXTR:
    case ZYDIS_MNEMONIC_BLSR:
    case ZYDIS_MNEMONIC_BLSI:
    case ZYDIS_MNEMONIC_BLSMSK:
      return ExecuteHostFlagged(m, d);
    case ZYDIS_MNEMONIC_CBW:
    case ZYDIS_MNEMONIC_CWDE:
    case ZYDIS_MNEMONIC_CDQE: {
      const unsigned to = size, from = size / 2;
      const uint64_t v = static_cast<uint64_t>(SignExtend(m.s.gpr[kRax] & SizeMask(from), from));
      WriteGpr(m, RegRef{RegClass::kGpr, kRax, static_cast<uint8_t>(to), 0}, v);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_CWD:
    case ZYDIS_MNEMONIC_CDQ:
    case ZYDIS_MNEMONIC_CQO: {
      const bool negative = m.s.gpr[kRax] & SignBit(size);
      WriteGpr(m, RegRef{RegClass::kGpr, kRdx, static_cast<uint8_t>(size), 0},
               negative ? ~0ull : 0);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_SHLX:
    case ZYDIS_MNEMONIC_SHRX:
    case ZYDIS_MNEMONIC_SARX:
    case ZYDIS_MNEMONIC_RORX:
      return ThreeOperand(m, d, mn);
    case ZYDIS_MNEMONIC_CMPXCHG: {
      const unsigned s = d.op[0].size;
      uint64_t dst = 0, src = 0, f = 0;
      if (!ReadInt(m, d.op[0], s, &dst) || !ReadInt(m, d.op[1], s, &src)) return Step::kEnded;
      const RegRef acc{RegClass::kGpr, kRax, static_cast<uint8_t>(s), 0};
      const Operand& dst_op = d.op[0];
      if (dst_op.type == OperandType::kRegister && dst_op.reg.shift == 0) {
        // Whether an unequal compare writes a 32-bit destination register back (zeroing its
        // upper half) differs between vendors: it runs on this CPU, on whole registers.
        uint64_t a = m.s.gpr[kRax], whole = m.s.gpr[dst_op.reg.index];
        f = m.s.rflags;
        HostCompareExchange(&a, &whole, src, s, &f);
        m.s.gpr[kRax] = a;
        if (dst_op.reg.index != kRax || (f & kZF)) m.s.gpr[dst_op.reg.index] = whole;
        SetFlags(m, kArithmeticFlags, f);
        return Step::kNext;
      }
      Sub(ReadGpr(m, acc), dst, 0, s, &f);
      // Equal: the source goes to the destination. Not equal: the CPU writes the old value back
      // to a memory destination (no change, but a page it may not write faults either way),
      // and loads it into the accumulator.
      if (!WriteInt(m, dst_op, s, (f & kZF) ? src : dst)) return Step::kEnded;
      if (!(f & kZF)) WriteGpr(m, acc, dst);
      SetFlags(m, kArithmeticFlags, f);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_XADD: {
      const unsigned s = d.op[0].size;
      uint64_t dst = 0, src = 0, f = 0;
      if (!ReadInt(m, d.op[0], s, &dst) || !ReadInt(m, d.op[1], s, &src)) return Step::kEnded;
      const uint64_t sum = Add(dst, src, 0, s, &f);
      // The source register gets the old value, then the destination the sum (the sum wins in
      // xadd r, r of one register); a memory destination goes first, so that a store that
      // faults leaves the register as it was.
      if (d.op[0].type == OperandType::kMemory) {
        if (!WriteInt(m, d.op[0], s, sum) || !WriteInt(m, d.op[1], s, dst)) return Step::kEnded;
      } else {
        WriteGpr(m, d.op[1].reg, dst);
        WriteGpr(m, d.op[0].reg, sum);
      }
      SetFlags(m, kArithmeticFlags, f);
      return Step::kNext;
    }
    case ZYDIS_MNEMONIC_CLC:
      SetFlags(m, kCF, 0);
      return Step::kNext;
    case ZYDIS_MNEMONIC_STC:
      SetFlags(m, kCF, kCF);
      return Step::kNext;
    case ZYDIS_MNEMONIC_CMC:
      m.s.rflags ^= kCF;
      return Step::kNext;
    case ZYDIS_MNEMONIC_CLD:
      SetFlags(m, kDF, 0);
      return Step::kNext;
    case ZYDIS_MNEMONIC_STD:
      SetFlags(m, kDF, kDF);
      return Step::kNext;
    case ZYDIS_MNEMONIC_LAHF:
      WriteGpr(m, RegRef{RegClass::kGpr, kRax, 1, 8}, (m.s.rflags & 0xd5) | 2);
      return Step::kNext;
    case ZYDIS_MNEMONIC_SAHF:
      SetFlags(m, kCF | kPF | kAF | kZF | kSF, (m.s.gpr[kRax] >> 8) & 0xd5);
      return Step::kNext;
    case ZYDIS_MNEMONIC_PUSH: {
      uint64_t v = 0;
      if (!ReadInt(m, d.op[0], size, &v)) return Step::kEnded;
      return Push(m, v, size) ? Step::kNext : Step::kEnded;
    }
    case ZYDIS_MNEMONIC_POP: {
      // A memory destination is addressed with rsp already incremented; a store there that
      // faults leaves rsp as it was.
      const uint64_t rsp = m.s.gpr[kRsp];
      uint64_t v = 0;
      if (!Pop(m, &v, size)) return Step::kEnded;
      if (WriteInt(m, d.op[0], size, v)) return Step::kNext;
      m.s.gpr[kRsp] = rsp;
      return Step::kEnded;
    }
    case ZYDIS_MNEMONIC_PUSHFQ:
      return Push(m, m.s.rflags & ~0x30000ull, 8) ? Step::kNext : Step::kEnded;
    case ZYDIS_MNEMONIC_LEAVE: {
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
    case ZYDIS_MNEMONIC_CALL: {
      uint64_t target = 0;
      if (!BranchTarget(m, d, &target) || !Push(m, m.next_rip, 8)) return Step::kEnded;
      m.s.rip = target;
      m.taken = true;
      return Step::kJump;
    }
    case ZYDIS_MNEMONIC_RET: {
      uint64_t target = 0;
      if (!Pop(m, &target, 8)) return Step::kEnded;
      if (d.operand_count > 0 && d.op[0].type == OperandType::kImmediate)
        m.s.gpr[kRsp] += d.op[0].imm & 0xffff;
      m.s.rip = target;
      m.taken = true;
      return Step::kJump;
    }
    case ZYDIS_MNEMONIC_JMP: {
      uint64_t target = 0;
      if (!BranchTarget(m, d, &target)) return Step::kEnded;
      m.s.rip = target;
      m.taken = true;
      return Step::kJump;
    }
    case ZYDIS_MNEMONIC_JRCXZ:
    case ZYDIS_MNEMONIC_JECXZ: {
      const uint64_t rcx = m.s.gpr[kRcx] & SizeMask(mn == ZYDIS_MNEMONIC_JECXZ ? 4 : 8);
      m.taken = rcx == 0;
      m.s.rip = m.taken ? d.branch.direct_target : m.next_rip;
      return Step::kJump;
    }
    case ZYDIS_MNEMONIC_LOOP:
    case ZYDIS_MNEMONIC_LOOPE:
    case ZYDIS_MNEMONIC_LOOPNE: {
      const uint64_t rcx = --m.s.gpr[kRcx];
      bool go = rcx != 0;
      if (mn == ZYDIS_MNEMONIC_LOOPE) go = go && (m.s.rflags & kZF);
      if (mn == ZYDIS_MNEMONIC_LOOPNE) go = go && !(m.s.rflags & kZF);
      m.taken = go;
      m.s.rip = go ? d.branch.direct_target : m.next_rip;
      return Step::kJump;
    }
    case ZYDIS_MNEMONIC_CPUID:
    case ZYDIS_MNEMONIC_RDTSC:
    case ZYDIS_MNEMONIC_RDTSCP:
    case ZYDIS_MNEMONIC_XGETBV:
    case ZYDIS_MNEMONIC_RDRAND:
    case ZYDIS_MNEMONIC_RDSEED:
    case ZYDIS_MNEMONIC_RDPID:
    case ZYDIS_MNEMONIC_RDPMC:
    case ZYDIS_MNEMONIC_RDPKRU:
    case ZYDIS_MNEMONIC_XSAVE:
    case ZYDIS_MNEMONIC_XSAVEC:
    case ZYDIS_MNEMONIC_XSAVEOPT:
    case ZYDIS_MNEMONIC_XRSTOR:
    case ZYDIS_MNEMONIC_FXSAVE:
    case ZYDIS_MNEMONIC_FXRSTOR:
    case ZYDIS_MNEMONIC_RDFSBASE:
    case ZYDIS_MNEMONIC_RDGSBASE:
    case ZYDIS_MNEMONIC_WRFSBASE:
    case ZYDIS_MNEMONIC_WRGSBASE:
      return m.End(EmulationEnd::kHiddenState);
    default:
      break;
  }
  if (const int cc = ConditionOf(mn); cc >= 0) {
    if (d.branch.is_branch) {  // jcc
      m.taken = Condition(m.s.rflags, static_cast<unsigned>(cc));
      m.s.rip = m.taken ? d.branch.direct_target : m.next_rip;
      return Step::kJump;
    }
    const bool holds = Condition(m.s.rflags, static_cast<unsigned>(cc));
    if (d.op[0].size == 1 && d.operand_count == 1)  // setcc
      return WriteInt(m, d.op[0], 1, holds ? 1 : 0) ? Step::kNext : Step::kEnded;
    // cmovcc: the source is read (a bad address faults) either way; a 32-bit destination is
    // zero-extended even when the condition fails.
    uint64_t v = 0, old = 0;
    const unsigned s = d.op[0].size;
    if (!ReadInt(m, d.op[1], s, &v) || !ReadInt(m, d.op[0], s, &old)) return Step::kEnded;
    return WriteInt(m, d.op[0], s, holds ? v : old) ? Step::kNext : Step::kEnded;
  }
  if (const unsigned s = StringSize(mn); s != 0) {
    // movsd and cmpsd are also SSE instructions: those have vector operands.
    if (d.is_vector) return Step::kNotMine;
    return StringOp(m, d, mn, s);
  }
  return Step::kNotMine;
}

}  // namespace pathprof::emulator
