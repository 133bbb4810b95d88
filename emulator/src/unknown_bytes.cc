#include "unknown_bytes.h"

#include <Zydis/Zydis.h>

#include "decoded_instruction.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

constexpr unsigned kDFBit = 10;

template <size_t N>
uint8_t Gather(const std::array<uint8_t, N>& kinds, uint64_t bits) {
  uint8_t u = 0;
  for (; bits != 0; bits &= bits - 1) u |= kinds[static_cast<size_t>(__builtin_ctzll(bits))];
  return u;
}

template <size_t N>
void Assign(std::array<uint8_t, N>& kinds, uint64_t bits, uint8_t u) {
  for (; bits != 0; bits &= bits - 1) kinds[static_cast<size_t>(__builtin_ctzll(bits))] = u;
}

EmulationEnd EndFor(uint8_t u) {
  if (u & kUnheldMemory) return EmulationEnd::kNotInSnapshot;
  if (u & kUnheldVector) return EmulationEnd::kVectorStateUnknown;
  return EmulationEnd::kRegisterUnknown;
}

// The kinds of the bytes an explicit memory operand reads (its address known by then).
uint8_t OperandBytes(Machine& m, const Operand& o, unsigned size) {
  if (o.type != OperandType::kMemory) return 0;
  return m.memory->UnknownAt(EffectiveAddress(m, o.mem), size);
}

}  // namespace

void UnknownState::VectorStateUnheld() {
  vector_low.fill(kUnheldVector);
  vector_high.fill(kUnheldVector);
  mask.fill(kUnheldVector);
  control |= kUnheldVector;
}

Step CheckUnknownInputs(Machine& m, const DecodedInstruction& d) {
  const DataFlow& f = d.flow;
  const UnknownState& u = *m.unknowns;
  // Addresses (and the count and direction that step them) must be known: the access itself
  // would go elsewhere, or fault, on another value.
  uint8_t steer = Gather(u.gpr, f.address);
  if (f.address != 0 && (f.flags_read & kDF)) steer |= u.flags[kDFBit];
  if (d.branch.is_branch) {
    // The condition, the target register, the count of loop/jrcxz, the target in memory.
    steer |= Gather(u.gpr, f.gpr_read) | Gather(u.flags, f.flags_read);
    if (d.branch.kind == BranchKind::kReturn)
      steer |= m.memory->UnknownAt(m.s.gpr[kRsp], 8);
    else if (!d.branch.has_direct_target && d.operand_count >= 1)
      steer |= OperandBytes(m, d.op[0], 8);
  }
  if (f.faults_on_value) {
    // div/idiv fault on a zero divisor or a quotient that overflows: whether the CPU would
    // fault depends on the values.
    steer |= Gather(u.gpr, f.gpr_read | f.gpr_merge);
    for (uint8_t i = 0; i < d.operand_count; ++i) steer |= OperandBytes(m, d.op[i], d.op[i].size);
  }
  if (steer != 0) return m.End(EndFor(steer));
  return Step::kNext;
}

void PropagateUnknown(Machine& m, const DecodedInstruction& d) {
  const DataFlow& f = d.flow;
  UnknownState& u = *m.unknowns;
  const uint8_t loaded = m.memory->TakeReadUnknown();
  if (f.leave) {  // rsp <- rbp, rbp <- [rbp]
    u.gpr[kRsp] = u.gpr[kRbp];
    u.gpr[kRbp] = loaded;
    m.memory->ApplyWriteUnknown(0);  // leave stores nothing
    return;
  }
  // Registers written in part keep the rest: their old kinds are inputs too.
  const uint8_t kept = Gather(u.gpr, f.gpr_merge) | Gather(u.vector_low, f.vector_merge) |
                       Gather(u.vector_high, f.vector_merge);
  uint8_t in = kept;
  if (!f.zero_idiom) {
    in |= loaded | Gather(u.gpr, f.gpr_read) | Gather(u.vector_low, f.vector_read) |
          Gather(u.vector_high, f.vector_read_high) | Gather(u.mask, f.mask_read) |
          Gather(u.flags, f.flags_read);
    if (f.control_read || (d.is_vector && u.control != 0 && VectorReadsMxcsr(d.mnemonic)))
      in |= u.control;
    // The EVEX writemask selects which elements change.
    if (d.mask_register != 0) in |= u.mask[d.mask_register];
  }
  Assign(u.gpr, f.gpr_write | f.gpr_merge, in);
  Assign(u.vector_low, f.vector_write | f.vector_merge, in);
  Assign(u.vector_high, f.vector_write_high | f.vector_merge, in);
  Assign(u.vector_high, f.vector_zero_high, 0);
  Assign(u.mask, f.mask_write, in);
  // Written or left as they were (a conditional write, an undefined flag): the new flag is
  // known only where both are.
  const uint64_t merged = f.flags_undefined | (f.flags_conditional ? f.flags_computed : 0);
  for (uint64_t bits = merged; bits != 0; bits &= bits - 1)
    u.flags[static_cast<size_t>(__builtin_ctzll(bits))] |= in;
  if (!f.flags_conditional) {
    Assign(u.flags, f.flags_computed, in);
    Assign(u.flags, f.flags_constant, 0);
  }
  // One state for the three control words: a write to one cannot make the others known.
  if (f.control_write) u.control |= in;
  // repe/repne cmps, scas: where they stop, and so rcx, rsi and rdi, depends on the data.
  if (f.counted_compare && loaded != 0) {
    u.gpr[kRcx] |= loaded;
    u.gpr[kRsi] |= loaded;
    u.gpr[kRdi] |= loaded;
  }
  m.memory->ApplyWriteUnknown(in);
}

}  // namespace pathprof::emulator
