#include "unit_work.h"

namespace pathprof::decoders {
const char* UnitWork::busiest() const {
  const char* name = "";
  double most = 0;
  auto consider = [&](double cycles, const char* what) {
    if (cycles > most) most = cycles, name = what;
  };
  // Divided, not multiplied by Add's reciprocals: five loads are then exactly as busy as
  // their address generation (5 / 3 both ways), and the tie names the load unit, as
  // loop_cycles.cc always did; 5 * (1 / 3) rounds below 5 / 3.
  for (size_t u = 1; u < work_.size(); ++u)
    consider(work_[u] / UnitsPerCycle(static_cast<Unit>(u)), UnitName(static_cast<Unit>(u)));
  consider(integer_ / kIntegerPipes, "integer pipes");
  consider(memory_ / kMemoryPipes, "address generation");
  consider(vector_ / kVectorPipes, "vector pipes");
  return name;
}

}  // namespace pathprof::decoders
