// Accuracy metrics that compare an estimated profile with an exact one (or two runs):
//  - overlap percentage: sum over keys of min(share in a, share in b) ([Vaswani 2007] §5.5.2;
//    the keys are those of docs/references.md);
//  - HPS relative-contribution overlap: the same over the members that make up the top 90% of
//    each profile, each member's share taken within its selection ([HPS 2005] §5);
//  - dynamic overlap: the mean overlap over fixed, non-overlapping windows of a stream;
//  - a rank table for the top k: rank in each profile, estimate vs exact, relative error.
// Profiles are weighted lists keyed by anything hashable and ordered (a 64-bit path id, a
// "caller->callee" string, a PCCT context string): duplicate keys add up, and weights that are
// negative or NaN count as zero.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pathprof::profiles {

template <typename Key>
using WeightedProfile = std::vector<std::pair<Key, double>>;

struct OverlapOptions {
  // Denominators of the shares; 0 means the sum of the profile's weights. Pass the true total
  // (e.g. every path the program executed) to charge an estimate for the mass it never saw.
  double total_a = 0;
  double total_b = 0;
};

namespace detail {

inline double Clean(double w) {
  return w > 0 ? w : 0;
}  // also maps NaN to 0

template <typename Key>
std::unordered_map<Key, double> Aggregate(const WeightedProfile<Key>& p, double* total) {
  std::unordered_map<Key, double> m;
  m.reserve(p.size());
  double t = 0;
  for (const auto& [k, w] : p) {
    double c = Clean(w);
    m[k] += c;
    t += c;
  }
  *total = t;
  return m;
}

// Order among equal weights: the key's own order when it has one, else its hash (still stable
// from run to run, since std::hash of the same value is the same).
template <typename Key>
bool KeyLess(const Key& a, const Key& b) {
  if constexpr (requires { a < b; }) {
    return a < b;
  } else {
    return std::hash<Key>{}(a) < std::hash<Key>{}(b);
  }
}

// Sums duplicate keys and sorts by weight, heaviest first; ties by key so output is stable.
template <typename Key>
WeightedProfile<Key> Ranked(const WeightedProfile<Key>& p) {
  double total;
  auto m = Aggregate(p, &total);
  WeightedProfile<Key> out(m.begin(), m.end());
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : KeyLess(x.first, y.first);
  });
  return out;
}

// How many of the (descending) weights it takes to reach `fraction` of `total`.
size_t CoverageCount(const std::vector<double>& descending, double total, double fraction);

}  // namespace detail

// Percentage (0-100) of weight the two profiles have in common: sum over keys of the minimum
// of the key's share in each. Two empty profiles overlap 100%; one empty profile, 0%.
template <typename Key>
double OverlapPercent(const WeightedProfile<Key>& a, const WeightedProfile<Key>& b,
                      const OverlapOptions& options = {}) {
  double sum_a, sum_b;
  auto ma = detail::Aggregate(a, &sum_a);
  auto mb = detail::Aggregate(b, &sum_b);
  double ta = options.total_a > 0 ? options.total_a : sum_a;
  double tb = options.total_b > 0 ? options.total_b : sum_b;
  if (ta <= 0 && tb <= 0) return 100.0;
  if (ta <= 0 || tb <= 0) return 0.0;
  const auto& small = ma.size() <= mb.size() ? ma : mb;
  const auto& large = ma.size() <= mb.size() ? mb : ma;
  double overlap = 0;
  for (const auto& [k, w] : small) {
    auto it = large.find(k);
    if (it == large.end()) continue;
    double wa = &small == &ma ? w : it->second;
    double wb = &small == &ma ? it->second : w;
    overlap += std::min(wa / ta, wb / tb);
  }
  return 100.0 * std::min(overlap, 1.0);
}

// The heaviest members that together make up at least `fraction` of the profile's weight (the
// member that crosses the line included), heaviest first.
template <typename Key>
WeightedProfile<Key> TopCoverage(const WeightedProfile<Key>& p, double fraction = 0.9) {
  auto ranked = detail::Ranked(p);
  std::vector<double> w;
  double total = 0;
  for (const auto& [k, x] : ranked) {
    w.push_back(x);
    total += x;
  }
  ranked.resize(detail::CoverageCount(w, total, fraction));
  return ranked;
}

// HPS relative-contribution overlap: select each profile's members making up `fraction` of it,
// take each member's contribution within its selection, and add the minimum contribution of
// every member over both selections.
template <typename Key>
double HpsOverlapPercent(const WeightedProfile<Key>& a, const WeightedProfile<Key>& b,
                         double fraction = 0.9) {
  return OverlapPercent(TopCoverage(a, fraction), TopCoverage(b, fraction));
}

// Averages per-window overlaps (thesis: dynamic overlap over non-overlapping windows of a
// fixed size). Feed it one overlap per complete window.
class DynamicOverlap {
 public:
  void AddWindow(double overlap_percent);
  size_t windows() const { return windows_; }
  // Mean of the windows' overlaps; 0 with no window (check windows()).
  double AveragePercent() const;
  double MinPercent() const { return windows_ ? min_ : 0; }
  double MaxPercent() const { return windows_ ? max_ : 0; }

 private:
  size_t windows_ = 0;
  double sum_ = 0, min_ = 0, max_ = 0;
};

// Dynamic overlap of matching lists of per-window profiles (window i of `exact` against window
// i of `estimate`); extra windows in the longer list are ignored.
template <typename Key>
DynamicOverlap DynamicOverlapOf(const std::vector<WeightedProfile<Key>>& exact,
                                const std::vector<WeightedProfile<Key>>& estimate) {
  DynamicOverlap d;
  for (size_t i = 0; i < exact.size() && i < estimate.size(); ++i)
    d.AddWindow(OverlapPercent(exact[i], estimate[i]));
  return d;
}

// One row of a top-k comparison. Ranks are 1-based; estimate_rank 0 = absent from the estimate.
template <typename Key>
struct RankRow {
  Key key{};
  size_t exact_rank = 0;
  size_t estimate_rank = 0;
  double exact = 0;
  double estimate = 0;
  double relative_error = 0;  // (estimate - exact) / exact; -1 when absent
};

// Rows for the top k members of the exact profile, in exact rank order.
template <typename Key>
std::vector<RankRow<Key>> RankTable(const WeightedProfile<Key>& exact,
                                    const WeightedProfile<Key>& estimate, size_t k) {
  auto re = detail::Ranked(exact);
  auto rs = detail::Ranked(estimate);
  std::unordered_map<Key, std::pair<size_t, double>> est;
  for (size_t i = 0; i < rs.size(); ++i)
    est.emplace(rs[i].first, std::make_pair(i + 1, rs[i].second));
  std::vector<RankRow<Key>> rows;
  for (size_t i = 0; i < re.size() && i < k; ++i) {
    RankRow<Key> r;
    r.key = re[i].first;
    r.exact_rank = i + 1;
    r.exact = re[i].second;
    if (auto it = est.find(r.key); it != est.end()) {
      r.estimate_rank = it->second.first;
      r.estimate = it->second.second;
    }
    r.relative_error = r.exact > 0 ? (r.estimate - r.exact) / r.exact : 0;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace pathprof::profiles
