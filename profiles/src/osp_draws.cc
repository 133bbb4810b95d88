#include "pathprof/profiles/osp_draws.h"

#include <bit>
#include <cmath>
#include <limits>

namespace pathprof::profiles {

uint64_t OspRandomDraws::NextSkip(double f) {
  if (!(f > 1)) return 0;
  // Inverse transform of the geometric distribution P(k) = (1-p)^k p, k >= 0: one log per
  // sampled subpath instead of one coin flip per block.
  const double u = 1.0 - NextUniform();  // (0, 1]
  const double k = std::floor(std::log(u) / std::log1p(-1.0 / f));
  if (!(k < 1.8e19)) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(k);
}

size_t OspRandomDraws::NextLengthIndex(const OspLengthDistribution& lengths) {
  return lengths.IndexForUniform(NextUniform());
}

double OspRandomDraws::NextUniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

uint64_t OspScriptedDraws::NextSkip(double /*f*/) {
  if (skips_.empty()) return std::numeric_limits<uint64_t>::max();
  const uint64_t s = skips_.front();
  skips_.pop_front();
  return s;
}

size_t OspScriptedDraws::NextLengthIndex(const OspLengthDistribution& lengths) {
  if (lengths_.empty()) return 0;
  const uint32_t len = lengths_.front();
  lengths_.pop_front();
  const size_t index =
      std::has_single_bit(len) && len >= 2 ? static_cast<size_t>(std::countr_zero(len)) - 1 : 0;
  return index < lengths.size() ? index : lengths.size() - 1;
}

}  // namespace pathprof::profiles
