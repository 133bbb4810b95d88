// The a-priori distribution of sampled subpath lengths (Oren, ch. 2.3.2-2.3.3): lengths are
// powers of two 2^n, 1 <= n <= log2(max_length); the default is geometric, P(2^n) ∝ 2^-n,
// renormalized over the allowed range.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::profiles {

class OspLengthDistribution {
 public:
  // P(2^n) ∝ 2^-n for 2 <= 2^n <= max_length (max_length a power of two, 2..65536).
  static Result<OspLengthDistribution> Geometric(uint32_t max_length);
  // P(2^n) equal for every 2 <= 2^n <= max_length.
  static Result<OspLengthDistribution> Uniform(uint32_t max_length);
  // weights[i] is the relative weight of length 2^(i+1); at least one must be positive.
  static Result<OspLengthDistribution> FromWeights(std::vector<double> weights);

  OspLengthDistribution();  // geometric up to 1024

  uint32_t max_length() const { return 1u << probabilities_.size(); }
  size_t size() const { return probabilities_.size(); }
  // Length of class i (2^(i+1)).
  static uint32_t LengthOf(size_t index) { return 2u << index; }
  double ProbabilityOfIndex(size_t index) const { return probabilities_[index]; }
  // P(length); 0 for a length the distribution never picks.
  double Probability(uint32_t length) const;
  // Maps u in [0,1) to a length class index by inverting the cumulative distribution.
  size_t IndexForUniform(double u) const;
  double MeanLength() const;

 private:
  OspLengthDistribution(std::vector<double> probabilities, std::vector<double> cumulative)
      : probabilities_(std::move(probabilities)), cumulative_(std::move(cumulative)) {}

  std::vector<double> probabilities_;
  std::vector<double> cumulative_;
};

}  // namespace pathprof::profiles
