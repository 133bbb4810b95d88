// Unknown bytes: a window emulated from a snapshot (Guest::Partial) runs on over values the
// snapshot does not hold, marking what it computes from them, and ends only where a branch
// condition, a jump target, an address, a count or a faulting operand depends on them. The
// window stays exact or shorter, never wrong: whatever steers it is known.
//
// Each register, flag and memory byte carries the kinds of unknown it was computed from (0:
// known). Per instruction, before it runs, CheckUnknownInputs ends the window where what steers
// it is unknown; after it retires, PropagateUnknown gives its outputs the union of its inputs'
// kinds, by the instruction's DataFlow summary (data_flow.h). Memory bytes are tracked by
// WindowMemory. Nothing here runs for a guest that holds everything.
#pragma once

#include <array>
#include <cstdint>

namespace pathprof::emulator {

// Why a value is unknown (bits; a value computed from several carries them all).
inline constexpr uint8_t kUnheldMemory = 1;    // bytes the guest does not hold
inline constexpr uint8_t kUnheldVector = 2;    // vector registers, opmasks, mxcsr it could not load
inline constexpr uint8_t kUnheldRegister = 4;  // a general register it does not hold

struct UnknownState {
  std::array<uint8_t, 16> gpr{};
  std::array<uint8_t, 32> vector_low{};   // bits 0-127 (xmm)
  std::array<uint8_t, 32> vector_high{};  // bits 128-511
  std::array<uint8_t, 8> mask{};
  std::array<uint8_t, 12> flags{};  // by RFLAGS bit (CF 0 ... OF 11)
  uint8_t control = 0;              // mxcsr, the x87 control and status words
  // Every vector register, opmask and control word: the guest could not load them.
  void VectorStateUnheld();
};

struct Machine;
struct DecodedInstruction;
enum class Step : uint8_t;

// Before `d` runs: Step::kEnded (m.end set) where a branch condition, jump target, address,
// count or faulting operand of it is unknown; else Step::kNext.
Step CheckUnknownInputs(Machine& m, const DecodedInstruction& d);
// After `d` retired: its outputs (registers, flags, the bytes it stored) take the kinds of its
// inputs (registers, flags, the bytes it loaded).
void PropagateUnknown(Machine& m, const DecodedInstruction& d);

}  // namespace pathprof::emulator
