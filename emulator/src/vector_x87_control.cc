// The x87 control and status words: fnstcw and fldcw (glibc's strtod and printf read the
// rounding control with fnstcw; CPython sets double precision around its float conversions
// with fnstcw/fldcw), fnstsw, and fwait (which `fstcw` assembles to before fnstcw). The words
// come from the thread's XSAVE area with the vector state. x87 arithmetic is not modelled:
// those instructions still end the window.
#include <Zydis/Zydis.h>

#include "vector_handlers.h"

namespace pathprof::emulator {
namespace {

// FSW.ES: an unmasked x87 exception is pending; the next waiting instruction raises #MF.
constexpr uint16_t kErrorSummary = 0x80;

// What fnstcw reads back after fldcw `value` on this CPU: reserved bits read as the CPU has
// them (Zen 4 keeps bits 0-5 and 8-12 and reads bit 6 as one). The host's own control word is
// put back; the tracer does no x87 arithmetic, so no exception of its own is pending.
uint16_t HostLoadedControlWord(uint16_t value) {
  uint16_t saved = 0, loaded = 0;
  asm volatile("fnstcw %[saved]\n\tfldcw %[value]\n\tfnstcw %[loaded]\n\tfldcw %[saved]"
               : [saved] "+m"(saved), [loaded] "=m"(loaded)
               : [value] "m"(value));
  return loaded;
}

Step StoreControlWord(Machine& m, const DecodedInstruction& d) {
  return WriteInt(m, d.op[0], 2, m.s.fcw) ? Step::kNext : Step::kEnded;
}

Step LoadControlWord(Machine& m, const DecodedInstruction& d) {
  uint64_t v = 0;
  if (!ReadInt(m, d.op[0], 2, &v)) return Step::kEnded;
  m.s.fcw = HostLoadedControlWord(static_cast<uint16_t>(v));
  return Step::kNext;
}

// fnstsw m16 | ax.
Step StoreStatusWord(Machine& m, const DecodedInstruction& d) {
  return WriteInt(m, d.op[0], 2, m.s.fsw) ? Step::kNext : Step::kEnded;
}

// fwait raises a pending unmasked x87 exception (#MF): the thread takes SIGFPE there.
Step Wait(Machine& m, const DecodedInstruction&) {
  return (m.s.fsw & kErrorSummary) ? m.End(EmulationEnd::kFault) : Step::kNext;
}

}  // namespace

void AddX87ControlOps(VectorHandlers& t) {
  t.Add({ZYDIS_MNEMONIC_FNSTCW}, StoreControlWord);
  t.Add({ZYDIS_MNEMONIC_FLDCW}, LoadControlWord);
  t.Add({ZYDIS_MNEMONIC_FNSTSW}, StoreStatusWord);
  t.Add({ZYDIS_MNEMONIC_FWAIT}, Wait);
}

}  // namespace pathprof::emulator
