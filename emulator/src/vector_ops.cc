// SSE/AVX/AVX2/AVX-512 and scalar floating-point instructions: the entry point. The families
// live in vector_*.cc and mask_registers.cc; this file loads the vector registers the first
// time a window needs them.
#include <Zydis/Zydis.h>

#include "machine.h"
#include "vector_handlers.h"

namespace pathprof::emulator {
namespace {

const VectorHandlers& Handlers() {
  static const VectorHandlers handlers = [] {
    VectorHandlers t;
    AddVectorMoves(t);
    AddVectorIntegerOps(t);
    AddVectorCompares(t);
    AddVectorShuffles(t);
    AddVectorBlends(t);
    AddMaskRegisterOps(t);
    AddStringCompares(t);
    AddFloatingPointOps(t);
    AddFloatingPointConversions(t);
    AddX87ControlOps(t);
    AddCarrylessMultiply(t);
    return t;
  }();
  return handlers;
}

}  // namespace

bool VectorReadsMxcsr(uint16_t mnemonic) {
  return Handlers().Find(mnemonic).floating_point;
}

Step ExecuteVector(Machine& m, const DecodedInstruction& d) {
  const VectorHandlers::Entry& e = Handlers().Find(d.mnemonic);
  if (!e.handler || (d.mask_control && !e.control_mask)) return Step::kNotMine;
  // movsd and cmpsd are also the string instructions, which have no vector operand. (Other
  // vector instructions may have none either: cvtsd2si r64, m64; ldmxcsr.)
  const auto mn = static_cast<ZydisMnemonic>(d.mnemonic);
  if (!d.is_vector && (mn == ZYDIS_MNEMONIC_MOVSD || mn == ZYDIS_MNEMONIC_CMPSD))
    return Step::kNotMine;
  // Most windows run integer code only: the registers are read from the target once, when the
  // first instruction that uses them comes (it may not be the first is_vector one: andn,
  // shlx... are VEX-encoded integer instructions).
  if (!m.s.vector_loaded) {
    ++m.stats->vector_loads;
    if (!m.guest->LoadVectorState(&m.s)) {
      if (m.unknowns == nullptr) return m.End(EmulationEnd::kVectorState);
      // A snapshot without the vector state: the registers run on as whatever they hold,
      // unknown (unknown_bytes.h).
      m.unknowns->VectorStateUnheld();
    }
    m.s.vector_loaded = true;
  }
  return e.handler(m, d);
}

}  // namespace pathprof::emulator
