// Where the OSP sampler gets its random choices: how many blocks to skip before the next subpath
// starts, which length to sample, and uniforms for thinning. Injectable so tests can replay the
// paper's walk-through (Oren, ch. 2.1) with fixed skips and lengths.
#pragma once

#include <cstdint>
#include <deque>
#include <random>

#include "pathprof/profiles/osp_lengths.h"

namespace pathprof::profiles {

class OspDrawSource {
 public:
  virtual ~OspDrawSource() = default;
  // Blocks to pass over before the next subpath start, when every block independently starts a
  // subpath with probability 1/f (a geometric count, mean f-1, so starts are f blocks apart on
  // average).
  virtual uint64_t NextSkip(double f) = 0;
  // A length class index of `lengths` (length 2^(index+1)).
  virtual size_t NextLengthIndex(const OspLengthDistribution& lengths) = 0;
  // Uniform in [0, 1), for thinning decisions.
  virtual double NextUniform() = 0;
};

class OspRandomDraws final : public OspDrawSource {
 public:
  explicit OspRandomDraws(uint64_t seed) : rng_(seed) {}
  uint64_t NextSkip(double f) override;
  size_t NextLengthIndex(const OspLengthDistribution& lengths) override;
  double NextUniform() override;

 private:
  std::mt19937_64 rng_;
};

// Replays given skips and lengths in order; once a list runs out, skips are "never again" and
// lengths the shortest class. Uniforms are 0, so thinning never rejects.
class OspScriptedDraws final : public OspDrawSource {
 public:
  OspScriptedDraws(std::deque<uint64_t> skips, std::deque<uint32_t> lengths)
      : skips_(std::move(skips)), lengths_(std::move(lengths)) {}
  uint64_t NextSkip(double f) override;
  size_t NextLengthIndex(const OspLengthDistribution& lengths) override;
  double NextUniform() override { return 0; }

 private:
  std::deque<uint64_t> skips_;
  std::deque<uint32_t> lengths_;
};

}  // namespace pathprof::profiles
