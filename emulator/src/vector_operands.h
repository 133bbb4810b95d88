// Operands of vector instructions: the registers zmm0-31 and k0-7, memory of up to 64 bytes,
// EVEX broadcasts and opmasks, and what a write does to the bits above its destination. Shared
// by the vector instruction files (vector_*.cc).
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>
#include <cstring>

#include "machine.h"

namespace pathprof::emulator {

inline constexpr unsigned kMaxVectorBytes = 64;

// One vector value, in register byte order; bytes past what was read or computed are zero.
struct Vector {
  alignas(64) uint8_t b[kMaxVectorBytes] = {};

  template <typename T>
  T Get(unsigned i) const {
    T v;
    std::memcpy(&v, b + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void Set(unsigned i, T v) {
    std::memcpy(b + i * sizeof(T), &v, sizeof(T));
  }
};

// The bytes a vector instruction works on: legacy SSE 16, VEX and EVEX by their L bits. Scalar
// instructions (ss/sd) ignore it.
inline unsigned OperationWidth(const DecodedInstruction& d) {
  return d.vex_or_evex ? d.vector_length : 16;
}

inline uint64_t LowBits(unsigned count) {
  return count >= 64 ? ~0ull : (1ull << count) - 1;
}

// The elements an EVEX instruction writes: its opmask, or all `count` when it has none.
inline uint64_t SelectedElements(const Machine& m, const DecodedInstruction& d, unsigned count) {
  const uint64_t all = LowBits(count);
  return d.mask_register ? m.s.k[d.mask_register] & all : all;
}

inline Vector RegisterValue(const Machine& m, uint8_t index) {
  Vector v;
  std::memcpy(v.b, m.s.zmm[index].data(), kMaxVectorBytes);
  return v;
}

inline bool IsVectorRegister(const Operand& o) {
  return o.type == OperandType::kRegister && o.reg.cls == RegClass::kVector;
}
inline bool IsMaskRegister(const Operand& o) {
  return o.type == OperandType::kRegister && o.reg.cls == RegClass::kMask;
}
inline bool IsMemory(const Operand& o) {
  return o.type == OperandType::kMemory;
}

// The operands of a two-source instruction: legacy SSE "op dst, src" reads dst as its first
// source; VEX and EVEX "op dst, src1, src2" do not. `imm` is the operand after them (or none).
struct TwoSources {
  const Operand& dst;
  const Operand& a;
  const Operand& b;
  const Operand& imm;
};
TwoSources SourcesOf(const DecodedInstruction& d);

// A memory operand that must be `alignment`-aligned (movdqa, movaps, legacy SSE m128 sources)
// faults otherwise: false and the window ends kFault. Registers always pass.
bool CheckAligned(Machine& m, const Operand& o, unsigned alignment);

// Reads `size` bytes of a source: a vector register's low bytes, memory, or an EVEX broadcast
// element repeated to `size` bytes. A legacy SSE 16-byte memory source must be aligned unless
// the instruction is one of the unaligned forms (movdqu, movups, lddqu, pcmpistri...). False:
// the window ended (m.end says why).
bool ReadVectorSource(Machine& m, const DecodedInstruction& d, const Operand& o, unsigned size,
                      Vector* out);

// The same for an EVEX instruction whose masked-off elements are not read: memory of
// unselected elements is not touched, so it cannot fault (glibc's evex functions rely on this
// to read up to the end of a page); those bytes read as zero. For element-wise instructions,
// whose unselected results do not depend on them.
bool ReadVectorSourceMasked(Machine& m, const DecodedInstruction& d, const Operand& o,
                            unsigned size, unsigned element_size, uint64_t selected, Vector* out);

// Writes the low `width` bytes of `v` to zmm`index`. VEX and EVEX writes zero the register
// above `width`; legacy SSE writes keep it.
void WriteVectorRegister(Machine& m, const DecodedInstruction& d, uint8_t index, const Vector& v,
                         unsigned width);

// Applies the EVEX opmask to the first `count` elements of a result bound for zmm`index`:
// unselected ones get the register's old value (merging) or zero ({z}).
void MergeUnselected(const Machine& m, const DecodedInstruction& d, uint8_t index,
                     unsigned element_size, unsigned count, Vector* result);

// Writes a result of `width` bytes to a register or memory destination under the EVEX opmask
// (elements of `element_size` bytes): into a register, unselected elements keep the old value
// (merging) or become zero ({z}); into memory, only selected elements are stored. False: the
// window ended.
bool WriteVectorDestination(Machine& m, const DecodedInstruction& d, const Operand& dst,
                            Vector result, unsigned width, unsigned element_size);

// Writes the 16-byte result of a scalar instruction (ss, sd, movss...) to a register: only
// element 0 (of `element_size` bytes) is under the EVEX opmask, the rest of the low 16 bytes
// is written as computed.
void WriteScalarDestination(Machine& m, const DecodedInstruction& d, const Operand& dst,
                            Vector result, unsigned element_size);

// Sets the six arithmetic flags (CF, PF, AF, ZF, SF, OF) to `flags`.
inline void SetArithmeticFlags(Machine& m, uint64_t flags) {
  m.s.rflags = (m.s.rflags & ~kArithmeticFlags) | (flags & kArithmeticFlags);
}

// k registers hold 64 bits; an instruction that writes N bits zeroes the rest.
inline void WriteMaskRegister(Machine& m, const Operand& o, uint64_t v) {
  m.s.k[o.reg.index] = v;
}

// A general register, memory or immediate source of `size` bytes (movd, vpbroadcastb r32,
// pinsrb...). Same as ReadInt, kept here so vector files read GPRs one way.
inline bool ReadScalarSource(Machine& m, const Operand& o, unsigned size, uint64_t* out) {
  if (IsVectorRegister(o)) {
    *out = 0;
    std::memcpy(out, m.s.zmm[o.reg.index].data(), size);
    return true;
  }
  return ReadInt(m, o, size, out);
}

}  // namespace pathprof::emulator
