// How a floating-point instruction's exceptions reach the guest: the host computes with every
// exception masked and reports the flags raised; they are merged into the guest's MXCSR, or
// end the window where the guest has that exception unmasked (its CPU traps there: SIGFPE).
#pragma once

#include "host_floating_point.h"
#include "machine.h"

namespace pathprof::emulator {

// With underflow unmasked the CPU also traps on tiny exact results, which a masked run does
// not flag: such a guest is not modelled (no compiler or libc sets it). False: ended.
inline bool FloatingPointModelled(Machine& m) {
  if (m.s.mxcsr & kMxcsrUnderflowMask) return true;
  m.End(EmulationEnd::kUnmodelled);
  return false;
}

// Merges `raised` into the guest's MXCSR; false (the window ends kFault, the result is not
// written) when one of them is unmasked.
inline bool CommitFloatingPointFlags(Machine& m, uint32_t raised) {
  const uint32_t unmasked = ~(m.s.mxcsr >> 7) & kMxcsrFlags;
  if (raised & unmasked) {
    m.End(EmulationEnd::kFault);
    return false;
  }
  m.s.mxcsr |= raised;
  return true;
}

// Runs compute(i) for each element i < count set in `selected`, under the guest's MXCSR, and
// commits the flags they raised. False: the window ended.
template <typename Fn>
bool RunUnderGuestMxcsr(Machine& m, uint64_t selected, unsigned count, Fn compute) {
  uint32_t raised = 0;
  {
    GuestFloatingPointScope scope(m.s.mxcsr);
    for (unsigned i = 0; i < count; ++i)
      if ((selected >> i) & 1) compute(i);
    raised = scope.Raised();
  }
  return CommitFloatingPointFlags(m, raised);
}

}  // namespace pathprof::emulator
