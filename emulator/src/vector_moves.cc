// Vector moves: whole registers (movdqa, vmovdqu8 {k}{z}...), general registers to and from
// vector registers (movd, movq), scalar floats (movss, movsd), the 64-bit halves (movhps,
// movlps, movhlps...) and vzeroupper/vzeroall.
#include "vector_handlers.h"
#include "vector_operands.h"

namespace pathprof::emulator {
namespace {

// The EVEX masking granularity of a move, and whether its memory operand must be aligned to
// the operation width (the A and NT forms raise #GP otherwise).
struct MoveShape {
  unsigned element = 4;
  bool aligned = false;
};

MoveShape ShapeOf(ZydisMnemonic mn) {
  switch (mn) {
    case ZYDIS_MNEMONIC_MOVDQA:
    case ZYDIS_MNEMONIC_VMOVDQA:
    case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_VMOVAPS:
    case ZYDIS_MNEMONIC_VMOVDQA32:
    case ZYDIS_MNEMONIC_MOVNTDQ:
    case ZYDIS_MNEMONIC_VMOVNTDQ:
    case ZYDIS_MNEMONIC_MOVNTPS:
    case ZYDIS_MNEMONIC_VMOVNTPS:
    case ZYDIS_MNEMONIC_MOVNTDQA:
    case ZYDIS_MNEMONIC_VMOVNTDQA:
      return {4, true};
    case ZYDIS_MNEMONIC_MOVAPD:
    case ZYDIS_MNEMONIC_VMOVAPD:
    case ZYDIS_MNEMONIC_VMOVDQA64:
    case ZYDIS_MNEMONIC_MOVNTPD:
    case ZYDIS_MNEMONIC_VMOVNTPD:
      return {8, true};
    case ZYDIS_MNEMONIC_VMOVDQU8:
      return {1, false};
    case ZYDIS_MNEMONIC_VMOVDQU16:
      return {2, false};
    case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_VMOVUPD:
    case ZYDIS_MNEMONIC_VMOVDQU64:
      return {8, false};
    default:  // movdqu, vmovdqu, movups, vmovups, vmovdqu32, lddqu, vlddqu
      return {4, false};
  }
}

Step WholeMove(Machine& m, const DecodedInstruction& d) {
  const MoveShape shape = ShapeOf(static_cast<ZydisMnemonic>(d.mnemonic));
  const unsigned width = OperationWidth(d);
  const Operand& dst = d.op[0];
  const Operand& src = d.op[1];
  if (shape.aligned && (!CheckAligned(m, dst, width) || !CheckAligned(m, src, width)))
    return Step::kEnded;
  Vector v;
  const uint64_t selected = SelectedElements(m, d, width / shape.element);
  if (!ReadVectorSourceMasked(m, d, src, width, shape.element, selected, &v)) return Step::kEnded;
  return WriteVectorDestination(m, d, dst, v, width, shape.element) ? Step::kNext : Step::kEnded;
}

// movd/movq: a general register or memory into the low bytes of an xmm (the rest of the 16
// bytes zeroed), or the low bytes of an xmm out; movq xmm, xmm copies the low 8 bytes.
Step IntegerMove(Machine& m, const DecodedInstruction& d) {
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const unsigned size = mn == ZYDIS_MNEMONIC_MOVD || mn == ZYDIS_MNEMONIC_VMOVD ? 4 : 8;
  const Operand& dst = d.op[0];
  const Operand& src = d.op[1];
  uint64_t v = 0;
  if (!ReadScalarSource(m, src, size, &v)) return Step::kEnded;
  if (IsVectorRegister(dst)) {
    Vector r;
    r.Set<uint64_t>(0, v);
    WriteVectorRegister(m, d, dst.reg.index, r, 16);
    return Step::kNext;
  }
  if (!IsVectorRegister(src)) return m.End(EmulationEnd::kUnmodelled);  // MMX registers
  return WriteInt(m, dst, size, v) ? Step::kNext : Step::kEnded;
}

// movss/movsd and their VEX/EVEX forms. From memory: the element, the rest of the 16 bytes
// zeroed. Register to register: only the element moves (legacy: into the destination's own
// bytes; VEX: over a copy of the first source). To memory: the element.
Step ScalarFloatMove(Machine& m, const DecodedInstruction& d) {
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const unsigned size = mn == ZYDIS_MNEMONIC_MOVSS || mn == ZYDIS_MNEMONIC_VMOVSS ? 4 : 8;
  const bool element_selected = !d.mask_register || (m.s.k[d.mask_register] & 1);
  const Operand& dst = d.op[0];
  if (IsMemory(dst)) {
    if (!element_selected) return Step::kNext;  // a masked-off store touches nothing
    Vector v;
    if (!ReadVectorSource(m, d, d.op[1], size, &v)) return Step::kEnded;
    const MemoryStatus st = m.memory->Write(EffectiveAddress(m, dst.mem), v.b, size);
    return st == MemoryStatus::kOk ? Step::kNext : m.MemoryEnd(st);
  }
  Vector r;
  if (IsMemory(d.op[1])) {
    if (element_selected && !ReadVectorSource(m, d, d.op[1], size, &r)) return Step::kEnded;
  } else {
    const bool three = d.operand_count >= 3;
    const Operand& base = three ? d.op[1] : dst;
    const Operand& src = three ? d.op[2] : d.op[1];
    if (!IsVectorRegister(base) || !IsVectorRegister(src)) return m.End(EmulationEnd::kUnmodelled);
    r = RegisterValue(m, base.reg.index);
    std::memset(r.b + 16, 0, kMaxVectorBytes - 16);
    std::memcpy(r.b, m.s.zmm[src.reg.index].data(), size);
  }
  WriteScalarDestination(m, d, dst, r, size);
  return Step::kNext;
}

// The 64-bit halves: movhps/movhpd/movlps/movlpd load into or store from one half; movhlps
// and movlhps move a half between registers. VEX forms take the other half from their first
// source instead of keeping the destination's.
Step HalfMove(Machine& m, const DecodedInstruction& d) {
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  const bool high = mn == ZYDIS_MNEMONIC_MOVHPS || mn == ZYDIS_MNEMONIC_MOVHPD ||
                    mn == ZYDIS_MNEMONIC_VMOVHPS || mn == ZYDIS_MNEMONIC_VMOVHPD;
  const Operand& dst = d.op[0];
  if (IsMemory(dst)) {
    if (!IsVectorRegister(d.op[1])) return m.End(EmulationEnd::kUnmodelled);
    const uint8_t* half = m.s.zmm[d.op[1].reg.index].data() + (high ? 8 : 0);
    const MemoryStatus st = m.memory->Write(EffectiveAddress(m, dst.mem), half, 8);
    return st == MemoryStatus::kOk ? Step::kNext : m.MemoryEnd(st);
  }
  const bool three = d.operand_count >= 3;
  const Operand& base = three ? d.op[1] : dst;
  const Operand& src = three ? d.op[2] : d.op[1];
  if (!IsVectorRegister(base)) return m.End(EmulationEnd::kUnmodelled);
  Vector half;
  unsigned from = 0, to = high ? 8 : 0;
  switch (mn) {
    case ZYDIS_MNEMONIC_MOVHLPS:
    case ZYDIS_MNEMONIC_VMOVHLPS:
      from = 8, to = 0;
      break;
    case ZYDIS_MNEMONIC_MOVLHPS:
    case ZYDIS_MNEMONIC_VMOVLHPS:
      from = 0, to = 8;
      break;
    default:
      break;
  }
  if (!ReadVectorSource(m, d, src, IsMemory(src) ? 8 : 16, &half)) return Step::kEnded;
  Vector r = RegisterValue(m, base.reg.index);
  std::memset(r.b + 16, 0, kMaxVectorBytes - 16);
  std::memcpy(r.b + to, half.b + from, 8);
  WriteVectorRegister(m, d, dst.reg.index, r, 16);
  return Step::kNext;
}

// vzeroupper zeroes bits 128-511 of zmm0-15, vzeroall all of them; zmm16-31 are untouched.
Step ZeroUpper(Machine& m, const DecodedInstruction& d) {
  const unsigned from = d.mnemonic == ZYDIS_MNEMONIC_VZEROALL ? 0 : 16;
  for (unsigned i = 0; i < 16; ++i) std::memset(m.s.zmm[i].data() + from, 0, 64 - from);
  return Step::kNext;
}

}  // namespace

void AddVectorMoves(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_MOVDQA,    ZYDIS_MNEMONIC_MOVDQU,    ZYDIS_MNEMONIC_MOVAPS,
         ZYDIS_MNEMONIC_MOVUPS,    ZYDIS_MNEMONIC_MOVAPD,    ZYDIS_MNEMONIC_MOVUPD,
         ZYDIS_MNEMONIC_LDDQU,     ZYDIS_MNEMONIC_MOVNTDQ,   ZYDIS_MNEMONIC_MOVNTPS,
         ZYDIS_MNEMONIC_MOVNTPD,   ZYDIS_MNEMONIC_MOVNTDQA,  ZYDIS_MNEMONIC_VMOVDQA,
         ZYDIS_MNEMONIC_VMOVDQU,   ZYDIS_MNEMONIC_VMOVAPS,   ZYDIS_MNEMONIC_VMOVUPS,
         ZYDIS_MNEMONIC_VMOVAPD,   ZYDIS_MNEMONIC_VMOVUPD,   ZYDIS_MNEMONIC_VLDDQU,
         ZYDIS_MNEMONIC_VMOVNTDQ,  ZYDIS_MNEMONIC_VMOVNTPS,  ZYDIS_MNEMONIC_VMOVNTPD,
         ZYDIS_MNEMONIC_VMOVNTDQA, ZYDIS_MNEMONIC_VMOVDQA32, ZYDIS_MNEMONIC_VMOVDQA64,
         ZYDIS_MNEMONIC_VMOVDQU8,  ZYDIS_MNEMONIC_VMOVDQU16, ZYDIS_MNEMONIC_VMOVDQU32,
         ZYDIS_MNEMONIC_VMOVDQU64},
        WholeMove);
  t.Add({ZYDIS_MNEMONIC_MOVD, ZYDIS_MNEMONIC_MOVQ, ZYDIS_MNEMONIC_VMOVD, ZYDIS_MNEMONIC_VMOVQ},
        IntegerMove);
  t.Add({ZYDIS_MNEMONIC_MOVSS, ZYDIS_MNEMONIC_MOVSD, ZYDIS_MNEMONIC_VMOVSS, ZYDIS_MNEMONIC_VMOVSD},
        ScalarFloatMove);
  t.Add({ZYDIS_MNEMONIC_MOVHPS, ZYDIS_MNEMONIC_MOVHPD, ZYDIS_MNEMONIC_MOVLPS, ZYDIS_MNEMONIC_MOVLPD,
         ZYDIS_MNEMONIC_MOVHLPS, ZYDIS_MNEMONIC_MOVLHPS, ZYDIS_MNEMONIC_VMOVHPS,
         ZYDIS_MNEMONIC_VMOVHPD, ZYDIS_MNEMONIC_VMOVLPS, ZYDIS_MNEMONIC_VMOVLPD,
         ZYDIS_MNEMONIC_VMOVHLPS, ZYDIS_MNEMONIC_VMOVLHPS},
        HalfMove);
  t.Add({ZYDIS_MNEMONIC_VZEROUPPER, ZYDIS_MNEMONIC_VZEROALL}, ZeroUpper);
}

}  // namespace pathprof::emulator
