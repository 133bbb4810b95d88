// Integer arithmetic with its flags, condition codes and the stack, shared by the integer
// instructions (integer_ops.cc) and the interpreter's fast path (fast_ops.h).
#pragma once

#include <Zydis/Zydis.h>

#include "machine.h"

namespace pathprof::emulator {

inline uint64_t SzpFlags(uint64_t result, unsigned size) {
  uint64_t f = 0;
  result &= SizeMask(size);
  if (result == 0) f |= kZF;
  if (result & SignBit(size)) f |= kSF;
  if (!__builtin_parity(static_cast<unsigned>(result & 0xff))) f |= kPF;
  return f;
}

inline void SetFlags(Machine& m, uint64_t affected, uint64_t values) {
  m.s.rflags = (m.s.rflags & ~affected) | (values & affected);
}

// a + b + carry, with every arithmetic flag.
inline uint64_t Add(uint64_t a, uint64_t b, uint64_t carry, unsigned size, uint64_t* flags) {
  const uint64_t mask = SizeMask(size);
  const unsigned __int128 wide = static_cast<unsigned __int128>(a) + b + carry;
  const uint64_t r = static_cast<uint64_t>(wide) & mask;
  uint64_t f = SzpFlags(r, size);
  if (size == 8 ? (wide >> 64) != 0 : (static_cast<uint64_t>(wide) >> (size * 8)) != 0) f |= kCF;
  if ((a ^ r) & (b ^ r) & SignBit(size)) f |= kOF;
  if ((a ^ b ^ r) & 0x10) f |= kAF;
  *flags = f;
  return r;
}

// a - b - borrow, with every arithmetic flag.
inline uint64_t Sub(uint64_t a, uint64_t b, uint64_t borrow, unsigned size, uint64_t* flags) {
  const uint64_t mask = SizeMask(size);
  const uint64_t r = (a - b - borrow) & mask;
  uint64_t f = SzpFlags(r, size);
  if (static_cast<unsigned __int128>(a) < static_cast<unsigned __int128>(b) + borrow) f |= kCF;
  if ((a ^ b) & (a ^ r) & SignBit(size)) f |= kOF;
  if ((a ^ b ^ r) & 0x10) f |= kAF;
  *flags = f;
  return r;
}

// The condition code (0-15) of a jcc/setcc/cmovcc mnemonic, or -1.
inline int ConditionOf(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_JO:
    case ZYDIS_MNEMONIC_SETO:
    case ZYDIS_MNEMONIC_CMOVO:
      return 0;
    case ZYDIS_MNEMONIC_JNO:
    case ZYDIS_MNEMONIC_SETNO:
    case ZYDIS_MNEMONIC_CMOVNO:
      return 1;
    case ZYDIS_MNEMONIC_JB:
    case ZYDIS_MNEMONIC_SETB:
    case ZYDIS_MNEMONIC_CMOVB:
      return 2;
    case ZYDIS_MNEMONIC_JNB:
    case ZYDIS_MNEMONIC_SETNB:
    case ZYDIS_MNEMONIC_CMOVNB:
      return 3;
    case ZYDIS_MNEMONIC_JZ:
    case ZYDIS_MNEMONIC_SETZ:
    case ZYDIS_MNEMONIC_CMOVZ:
      return 4;
    case ZYDIS_MNEMONIC_JNZ:
    case ZYDIS_MNEMONIC_SETNZ:
    case ZYDIS_MNEMONIC_CMOVNZ:
      return 5;
    case ZYDIS_MNEMONIC_JBE:
    case ZYDIS_MNEMONIC_SETBE:
    case ZYDIS_MNEMONIC_CMOVBE:
      return 6;
    case ZYDIS_MNEMONIC_JNBE:
    case ZYDIS_MNEMONIC_SETNBE:
    case ZYDIS_MNEMONIC_CMOVNBE:
      return 7;
    case ZYDIS_MNEMONIC_JS:
    case ZYDIS_MNEMONIC_SETS:
    case ZYDIS_MNEMONIC_CMOVS:
      return 8;
    case ZYDIS_MNEMONIC_JNS:
    case ZYDIS_MNEMONIC_SETNS:
    case ZYDIS_MNEMONIC_CMOVNS:
      return 9;
    case ZYDIS_MNEMONIC_JP:
    case ZYDIS_MNEMONIC_SETP:
    case ZYDIS_MNEMONIC_CMOVP:
      return 10;
    case ZYDIS_MNEMONIC_JNP:
    case ZYDIS_MNEMONIC_SETNP:
    case ZYDIS_MNEMONIC_CMOVNP:
      return 11;
    case ZYDIS_MNEMONIC_JL:
    case ZYDIS_MNEMONIC_SETL:
    case ZYDIS_MNEMONIC_CMOVL:
      return 12;
    case ZYDIS_MNEMONIC_JNL:
    case ZYDIS_MNEMONIC_SETNL:
    case ZYDIS_MNEMONIC_CMOVNL:
      return 13;
    case ZYDIS_MNEMONIC_JLE:
    case ZYDIS_MNEMONIC_SETLE:
    case ZYDIS_MNEMONIC_CMOVLE:
      return 14;
    case ZYDIS_MNEMONIC_JNLE:
    case ZYDIS_MNEMONIC_SETNLE:
    case ZYDIS_MNEMONIC_CMOVNLE:
      return 15;
    default:
      return -1;
  }
}

inline bool Push(Machine& m, uint64_t v, unsigned size) {
  const uint64_t rsp = m.s.gpr[kRsp] - size;
  const MemoryStatus st = m.memory->Write(rsp, &v, size);
  if (st != MemoryStatus::kOk) {
    m.MemoryEnd(st);
    return false;
  }
  m.s.gpr[kRsp] = rsp;
  return true;
}

inline bool Pop(Machine& m, uint64_t* v, unsigned size) {
  *v = 0;
  const MemoryStatus st = m.memory->Read(m.s.gpr[kRsp], v, size);
  if (st != MemoryStatus::kOk) {
    m.MemoryEnd(st);
    return false;
  }
  m.s.gpr[kRsp] += size;
  return true;
}

}  // namespace pathprof::emulator
