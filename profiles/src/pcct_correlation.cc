#include "pcct_correlation.h"

#include <cmath>
#include <unordered_map>

namespace pathprof::profiles {

double Correlation(const std::vector<std::pair<std::string, double>>& a,
                   const std::vector<std::pair<std::string, double>>& b) {
  std::unordered_map<std::string, std::pair<double, double>> joined;
  joined.reserve(a.size() + b.size());
  for (const auto& [key, v] : a) joined[key].first += v;
  for (const auto& [key, v] : b) joined[key].second += v;
  const double n = static_cast<double>(joined.size());
  if (joined.empty()) return 1.0;
  double mean_a = 0, mean_b = 0;
  for (const auto& [key, v] : joined) {
    mean_a += v.first;
    mean_b += v.second;
  }
  mean_a /= n;
  mean_b /= n;
  double cov = 0, var_a = 0, var_b = 0;
  bool equal = true;
  for (const auto& [key, v] : joined) {
    const double da = v.first - mean_a, db = v.second - mean_b;
    cov += da * db;
    var_a += da * da;
    var_b += db * db;
    equal = equal && v.first == v.second;
  }
  if (var_a == 0 || var_b == 0) return equal ? 1.0 : 0.0;
  return cov / std::sqrt(var_a * var_b);
}

double PcctCorrelation(const Pcct& a, const Pcct& b) {
  return Correlation(a.ContextWeights(), b.ContextWeights());
}

}  // namespace pathprof::profiles
