#include "pathprof/profiles/osp_lengths.h"

#include <bit>
#include <cmath>
#include <string>

namespace pathprof::profiles {

namespace {

constexpr uint32_t kMaxSupportedLength = 1u << 16;

Result<size_t> ClassCount(uint32_t max_length) {
  if (max_length < 2 || max_length > kMaxSupportedLength || !std::has_single_bit(max_length)) {
    return Error(ErrorCode::kInvalidArgument, "osp: max subpath length " +
                                                  std::to_string(max_length) +
                                                  " must be a power of two between 2 and " +
                                                  std::to_string(kMaxSupportedLength));
  }
  return static_cast<size_t>(std::countr_zero(max_length));
}

}  // namespace

OspLengthDistribution::OspLengthDistribution() {
  *this = *Geometric(1024);
}

Result<OspLengthDistribution> OspLengthDistribution::Geometric(uint32_t max_length) {
  PATHPROF_ASSIGN_OR_RETURN(size_t classes, ClassCount(max_length));
  std::vector<double> w;
  for (size_t i = 0; i < classes; ++i) w.push_back(std::ldexp(1.0, -static_cast<int>(i + 1)));
  return FromWeights(std::move(w));
}

Result<OspLengthDistribution> OspLengthDistribution::Uniform(uint32_t max_length) {
  PATHPROF_ASSIGN_OR_RETURN(size_t classes, ClassCount(max_length));
  return FromWeights(std::vector<double>(classes, 1.0));
}

Result<OspLengthDistribution> OspLengthDistribution::FromWeights(std::vector<double> weights) {
  if (weights.empty() || weights.size() > 16) {
    return Error(ErrorCode::kInvalidArgument,
                 "osp: length weights must cover 1 to 16 classes (lengths 2..65536), got " +
                     std::to_string(weights.size()));
  }
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      return Error(ErrorCode::kInvalidArgument,
                   "osp: length weights must be finite and non-negative");
    }
    total += w;
  }
  if (total <= 0) {
    return Error(ErrorCode::kInvalidArgument, "osp: at least one length weight must be positive");
  }
  std::vector<double> probabilities, cumulative;
  double running = 0;
  for (double w : weights) {
    probabilities.push_back(w / total);
    running += w / total;
    cumulative.push_back(running);
  }
  cumulative.back() = 1.0;
  return OspLengthDistribution(std::move(probabilities), std::move(cumulative));
}

double OspLengthDistribution::Probability(uint32_t length) const {
  if (length < 2 || !std::has_single_bit(length)) return 0;
  const size_t index = static_cast<size_t>(std::countr_zero(length)) - 1;
  return index < probabilities_.size() ? probabilities_[index] : 0;
}

size_t OspLengthDistribution::IndexForUniform(double u) const {
  for (size_t i = 0; i < cumulative_.size(); ++i) {
    if (u < cumulative_[i] && probabilities_[i] > 0) return i;
  }
  // u == 1.0 by rounding: the last class with mass.
  for (size_t i = cumulative_.size(); i-- > 0;) {
    if (probabilities_[i] > 0) return i;
  }
  return 0;
}

double OspLengthDistribution::MeanLength() const {
  double mean = 0;
  for (size_t i = 0; i < probabilities_.size(); ++i) mean += probabilities_[i] * LengthOf(i);
  return mean;
}

}  // namespace pathprof::profiles
