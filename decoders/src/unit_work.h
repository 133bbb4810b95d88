// The work a stream of instructions puts on the execution units, and how many cycles the
// busiest of them needs for it: per unit, its work over how many of its operations start a
// cycle (instruction_costs.h), and for the pipes that several units share (integer pipes,
// address generation, FP/vector pipes), their summed work over the pipes. A core cannot run the
// stream faster than that, whatever its dependencies.
//
// One accumulator for both timings of the cycle model: loop_cycles.cc adds a block once and
// reads the bound; window_timer.cc adds a window's instructions one by one and reads the bound
// so far after each, so Add keeps the running maximum (cycles()) at a few additions an
// instruction, and the unit's name is worked out only when asked (busiest()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "instruction_costs.h"

namespace pathprof::decoders {

class UnitWork {
 public:
  // One instruction: `occupancy` cycles on `unit`, and its memory operands' loads and stores
  // (which occupy the load and store units and the address generation pipes besides).
  // Inline: the window timer calls it for every instruction of every window.
  void Add(Unit unit, double occupancy, uint8_t loads, uint8_t stores);
  // Cycles the busiest unit or pipe group needs for everything added since construction.
  double cycles() const { return cycles_; }
  // Its name (the first in UnitName order on a tie, then the integer pipes, address
  // generation, the vector pipes); "" when nothing takes a unit's time.
  const char* busiest() const;

 private:
  void Raise(double cycles) { cycles_ = cycles > cycles_ ? cycles : cycles_; }

  std::array<double, static_cast<size_t>(Unit::kCount)> work_{};  // occupancy per unit
  double integer_ = 0;  // kAlu and kMultiplier work: the multiplier sits on an ALU pipe
  double memory_ = 0;   // loads and stores: the address generation units
  double vector_ = 0;   // issue slots of the FP/vector pipes
  double cycles_ = 0;
};

namespace unit_work_detail {
// 1 / UnitsPerCycle, per unit, computed once (at start-up).
inline const std::array<double, static_cast<size_t>(Unit::kCount)> kCyclesPerWork = [] {
  std::array<double, static_cast<size_t>(Unit::kCount)> a{};
  for (size_t u = 1; u < a.size(); ++u) a[u] = 1.0 / UnitsPerCycle(static_cast<Unit>(u));
  return a;
}();

inline constexpr size_t kLoadIndex = static_cast<size_t>(Unit::kLoad);
inline constexpr size_t kStoreIndex = static_cast<size_t>(Unit::kStore);

}  // namespace unit_work_detail

inline void UnitWork::Add(Unit unit, double occupancy, uint8_t loads, uint8_t stores) {
  if (unit != Unit::kNone) {
    const size_t u = static_cast<size_t>(unit);
    work_[u] += occupancy;
    Raise(work_[u] * unit_work_detail::kCyclesPerWork[u]);
  }
  switch (unit) {
    case Unit::kAlu:
    case Unit::kMultiplier:
      integer_ += occupancy;
      Raise(integer_ / kIntegerPipes);
      break;
    case Unit::kFloatDivider:  // holds its divider for several cycles but its pipe for one
      vector_ += 1;
      Raise(vector_ / kVectorPipes);
      break;
    case Unit::kVectorAlu:
    case Unit::kVectorShuffle:
    case Unit::kFloatAdd:
    case Unit::kFloatMul:
      vector_ += occupancy;
      Raise(vector_ / kVectorPipes);
      break;
    default:
      break;
  }
  if (loads + stores > 0) {
    work_[unit_work_detail::kLoadIndex] += loads;
    work_[unit_work_detail::kStoreIndex] += stores;
    memory_ += loads + stores;
    Raise(work_[unit_work_detail::kLoadIndex] *
          unit_work_detail::kCyclesPerWork[unit_work_detail::kLoadIndex]);
    Raise(work_[unit_work_detail::kStoreIndex] *
          unit_work_detail::kCyclesPerWork[unit_work_detail::kStoreIndex]);
    Raise(memory_ / kMemoryPipes);
  }
}

}  // namespace pathprof::decoders
