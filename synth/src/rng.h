// The generator's and executor's random source: SplitMix64, chosen over <random> engines for a
// stable sequence across standard libraries (seeded streams must not change with the toolchain)
// and for speed (one multiply-xorshift round per draw).
#pragma once

#include <cstdint>

namespace pathprof::synth {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n > 0 (multiply-shift; the bias is below 2^-32).
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(((Next() >> 32) * n) >> 32); }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace pathprof::synth
