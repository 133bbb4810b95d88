#include "vector_operands.h"

#include <algorithm>

namespace pathprof::emulator {
namespace {

// Legacy SSE instructions whose 16-byte memory operand may be unaligned; every other legacy
// SSE m128 operand raises #GP when it is not 16-byte aligned (SDM vol. 1, 10.4.1.1).
bool LegacyAllowsUnaligned(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_MOVDQU:
    case ZYDIS_MNEMONIC_MOVUPS:
    case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_LDDQU:
    case ZYDIS_MNEMONIC_PCMPESTRI:
    case ZYDIS_MNEMONIC_PCMPESTRM:
    case ZYDIS_MNEMONIC_PCMPISTRI:
    case ZYDIS_MNEMONIC_PCMPISTRM:
      return true;
    default:
      return false;
  }
}

bool ReadMemory(Machine& m, uint64_t address, void* out, size_t size) {
  const MemoryStatus st = m.memory->Read(address, out, size);
  if (st == MemoryStatus::kOk) return true;
  m.MemoryEnd(st);
  return false;
}

bool WriteMemory(Machine& m, uint64_t address, const void* in, size_t size) {
  const MemoryStatus st = m.memory->Write(address, in, size);
  if (st == MemoryStatus::kOk) return true;
  m.MemoryEnd(st);
  return false;
}

// Calls fn(first_element, count) for each run of consecutive set bits of `selected`, so that
// a masked access touches memory in as few pieces as there are runs.
template <typename Fn>
bool ForEachRun(uint64_t selected, unsigned elements, Fn fn) {
  unsigned i = 0;
  while (i < elements) {
    if (!((selected >> i) & 1)) {
      ++i;
      continue;
    }
    unsigned j = i;
    while (j < elements && ((selected >> j) & 1)) ++j;
    if (!fn(i, j - i)) return false;
    i = j;
  }
  return true;
}

}  // namespace

TwoSources SourcesOf(const DecodedInstruction& d) {
  if (d.vex_or_evex && d.operand_count >= 3) return {d.op[0], d.op[1], d.op[2], d.op[3]};
  return {d.op[0], d.op[0], d.op[1], d.op[2]};
}

bool CheckAligned(Machine& m, const Operand& o, unsigned alignment) {
  if (!IsMemory(o) || EffectiveAddress(m, o.mem) % alignment == 0) return true;
  m.End(EmulationEnd::kFault);
  return false;
}

bool ReadVectorSource(Machine& m, const DecodedInstruction& d, const Operand& o, unsigned size,
                      Vector* out) {
  *out = Vector{};
  if (IsVectorRegister(o)) {
    std::memcpy(out->b, m.s.zmm[o.reg.index].data(), size);
    return true;
  }
  if (!IsMemory(o)) {
    m.End(EmulationEnd::kUnmodelled);
    return false;
  }
  const uint64_t address = EffectiveAddress(m, o.mem);
  if (o.broadcast) {
    const unsigned element = o.size;
    if (element == 0 || element > 8 || size % element != 0) {
      m.End(EmulationEnd::kUnmodelled);
      return false;
    }
    if (!ReadMemory(m, address, out->b, element)) return false;
    for (unsigned i = element; i < size; i += element) std::memcpy(out->b + i, out->b, element);
    return true;
  }
  if (!d.vex_or_evex && size == 16 &&
      !LegacyAllowsUnaligned(static_cast<ZydisMnemonic>(d.mnemonic)) && !CheckAligned(m, o, 16))
    return false;
  return ReadMemory(m, address, out->b, size);
}

bool ReadVectorSourceMasked(Machine& m, const DecodedInstruction& d, const Operand& o,
                            unsigned size, unsigned element_size, uint64_t selected, Vector* out) {
  const unsigned elements = size / element_size;
  if (!IsMemory(o) || o.broadcast || selected == LowBits(elements))
    return ReadVectorSource(m, d, o, size, out);
  *out = Vector{};
  const uint64_t address = EffectiveAddress(m, o.mem);
  return ForEachRun(selected, elements, [&](unsigned first, unsigned count) {
    const unsigned offset = first * element_size;
    return ReadMemory(m, address + offset, out->b + offset, count * element_size);
  });
}

void WriteVectorRegister(Machine& m, const DecodedInstruction& d, uint8_t index, const Vector& v,
                         unsigned width) {
  uint8_t* reg = m.s.zmm[index].data();
  std::memcpy(reg, v.b, width);
  if (d.vex_or_evex) std::memset(reg + width, 0, kMaxVectorBytes - width);
}

void MergeUnselected(const Machine& m, const DecodedInstruction& d, uint8_t index,
                     unsigned element_size, unsigned count, Vector* result) {
  const uint64_t selected = SelectedElements(m, d, count);
  if (selected == LowBits(count)) return;
  const uint8_t* old = m.s.zmm[index].data();
  for (unsigned i = 0; i < count; ++i) {
    if ((selected >> i) & 1) continue;
    uint8_t* e = result->b + i * element_size;
    if (d.zeroing)
      std::memset(e, 0, element_size);
    else
      std::memcpy(e, old + i * element_size, element_size);
  }
}

bool WriteVectorDestination(Machine& m, const DecodedInstruction& d, const Operand& dst,
                            Vector result, unsigned width, unsigned element_size) {
  const unsigned elements = width / element_size;
  const uint64_t selected = SelectedElements(m, d, elements);
  if (IsVectorRegister(dst)) {
    MergeUnselected(m, d, dst.reg.index, element_size, elements, &result);
    WriteVectorRegister(m, d, dst.reg.index, result, width);
    return true;
  }
  if (!IsMemory(dst)) {
    m.End(EmulationEnd::kUnmodelled);
    return false;
  }
  const uint64_t address = EffectiveAddress(m, dst.mem);
  if (selected == LowBits(elements)) return WriteMemory(m, address, result.b, width);
  return ForEachRun(selected, elements, [&](unsigned first, unsigned count) {
    const unsigned offset = first * element_size;
    return WriteMemory(m, address + offset, result.b + offset, count * element_size);
  });
}

void WriteScalarDestination(Machine& m, const DecodedInstruction& d, const Operand& dst,
                            Vector result, unsigned element_size) {
  if (d.mask_register && !(m.s.k[d.mask_register] & 1)) {
    if (d.zeroing)
      std::memset(result.b, 0, element_size);
    else
      std::memcpy(result.b, m.s.zmm[dst.reg.index].data(), element_size);
  }
  WriteVectorRegister(m, d, dst.reg.index, result, 16);
}

}  // namespace pathprof::emulator
