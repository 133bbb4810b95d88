// The interpreter's view of one window in progress: registers, memory, and how the current
// instruction ended. Operand access shared by the integer and vector instruction files.
#pragma once

#include <cstdint>
#include <cstring>

#include "decoded_instruction.h"
#include "pathprof/emulator/window_emulator.h"
#include "unknown_bytes.h"
#include "window_memory.h"

namespace pathprof::emulator {

// RFLAGS bits the interpreter models.
inline constexpr uint64_t kCF = 1u << 0, kPF = 1u << 2, kAF = 1u << 4, kZF = 1u << 6, kSF = 1u << 7,
                          kDF = 1u << 10, kOF = 1u << 11;
inline constexpr uint64_t kArithmeticFlags = kCF | kPF | kAF | kZF | kSF | kOF;

// How executing one instruction went.
enum class Step : uint8_t {
  kNext,     // retired; rip moves to the next instruction
  kJump,     // retired; rip set by the instruction (m.taken says whether a branch was taken)
  kNotMine,  // this file does not implement the mnemonic
  kEnded,    // the window ends before this instruction (m.end says why)
};

struct Machine {
  CpuState s;
  WindowMemory* memory = nullptr;
  Guest* guest = nullptr;
  EmulatorStats* stats = nullptr;
  UnknownState* unknowns = nullptr;  // tracked for a partial guest (unknown_bytes.h), else null
  uint64_t next_rip = 0;             // address of the next instruction (for rip-relative operands)
  bool taken = false;
  EmulationEnd end = EmulationEnd::kComplete;

  Step End(EmulationEnd why) {
    end = why;
    return Step::kEnded;
  }
  Step MemoryEnd(MemoryStatus st) {
    switch (st) {
      case MemoryStatus::kPageLimit:
        return End(EmulationEnd::kPageLimit);
      case MemoryStatus::kReadOnly:
        return End(EmulationEnd::kFault);
      case MemoryStatus::kProtectionUnknown:
        return End(EmulationEnd::kProtectionUnknown);
      default:
        return End(EmulationEnd::kUnreadable);
    }
  }
};

// The value mask of an operand of `size` bytes (0 to 8), looked up: it is on every operand.
inline constexpr uint64_t kSizeMasks[9] = {
    0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ~0ull};
inline uint64_t SizeMask(unsigned size) {
  return size >= 8 ? ~0ull : kSizeMasks[size];
}
inline uint64_t SignBit(unsigned size) {
  return 1ull << (size * 8 - 1);
}
inline int64_t SignExtend(uint64_t v, unsigned size) {
  const unsigned shift = 64 - size * 8;
  return static_cast<int64_t>(v << shift) >> shift;
}

inline uint64_t ReadGpr(const Machine& m, const RegRef& r) {
  return (m.s.gpr[r.index] >> r.shift) & SizeMask(r.size);
}
// 32-bit writes zero the upper half; 8- and 16-bit writes keep the rest of the register.
inline void WriteGpr(Machine& m, const RegRef& r, uint64_t v) {
  uint64_t& g = m.s.gpr[r.index];
  if (r.size == 8) {
    g = v;
  } else if (r.size == 4) {
    g = v & 0xffffffffu;
  } else {
    const uint64_t mask = SizeMask(r.size) << r.shift;
    g = (g & ~mask) | ((v << r.shift) & mask);
  }
}

inline uint64_t EffectiveAddress(const Machine& m, const MemRef& mem) {
  uint64_t a = static_cast<uint64_t>(mem.displacement);
  if (mem.base.cls == RegClass::kGpr)
    a += m.s.gpr[mem.base.index] & SizeMask(mem.base.size);
  else if (mem.base.cls == RegClass::kRip)
    a += m.next_rip;
  if (mem.index.cls == RegClass::kGpr)
    a += (m.s.gpr[mem.index.index] & SizeMask(mem.index.size)) * mem.scale;
  if (mem.address_size == 4) a &= 0xffffffffu;
  if (mem.segment == 1) a += m.s.fs_base;
  if (mem.segment == 2) a += m.s.gs_base;
  return a;
}

// Integer operands (register, memory or immediate) of up to 8 bytes. False: the window ended
// (m.end set).
[[gnu::always_inline]] inline bool ReadInt(Machine& m, const Operand& o, unsigned size,
                                           uint64_t* out) {
  switch (o.type) {
    case OperandType::kRegister:
      if (o.reg.cls != RegClass::kGpr) {
        m.end = EmulationEnd::kUnmodelled;
        return false;
      }
      *out = ReadGpr(m, o.reg) & SizeMask(size);
      return true;
    case OperandType::kImmediate:
      *out = o.imm & SizeMask(size);
      return true;
    case OperandType::kMemory: {
      uint64_t v = 0;
      const MemoryStatus st = m.memory->Read(EffectiveAddress(m, o.mem), &v, size);
      if (st != MemoryStatus::kOk) {
        m.MemoryEnd(st);
        return false;
      }
      *out = v;
      return true;
    }
    default:
      m.end = EmulationEnd::kUnmodelled;
      return false;
  }
}

[[gnu::always_inline]] inline bool WriteInt(Machine& m, const Operand& o, unsigned size,
                                            uint64_t v) {
  switch (o.type) {
    case OperandType::kRegister:
      if (o.reg.cls != RegClass::kGpr) {
        m.end = EmulationEnd::kUnmodelled;
        return false;
      }
      WriteGpr(m, o.reg, v);
      return true;
    case OperandType::kMemory: {
      const MemoryStatus st = m.memory->Write(EffectiveAddress(m, o.mem), &v, size);
      if (st != MemoryStatus::kOk) {
        m.MemoryEnd(st);
        return false;
      }
      return true;
    }
    default:
      m.end = EmulationEnd::kUnmodelled;
      return false;
  }
}

// The condition of a jcc/setcc/cmovcc, by its 4-bit x86 encoding (o, no, b, nb, z, nz, be, nbe,
// s, ns, p, np, l, nl, le, nle).
inline bool Condition(uint64_t f, unsigned cc) {
  bool r = false;
  switch (cc >> 1) {
    case 0:
      r = f & kOF;
      break;
    case 1:
      r = f & kCF;
      break;
    case 2:
      r = f & kZF;
      break;
    case 3:
      r = (f & kCF) || (f & kZF);
      break;
    case 4:
      r = f & kSF;
      break;
    case 5:
      r = f & kPF;
      break;
    case 6:
      r = ((f & kSF) != 0) != ((f & kOF) != 0);
      break;
    default:
      r = (f & kZF) || (((f & kSF) != 0) != ((f & kOF) != 0));
      break;
  }
  return (cc & 1) ? !r : r;
}

// Executes one instruction of its family; kNotMine when it is not one of them.
Step ExecuteInteger(Machine& m, const DecodedInstruction& d);
Step ExecuteVector(Machine& m, const DecodedInstruction& d);
// Whether the vector instruction `mnemonic` rounds or raises by mxcsr.
bool VectorReadsMxcsr(uint16_t mnemonic);

}  // namespace pathprof::emulator
