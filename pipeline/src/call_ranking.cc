#include <cinttypes>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>

#include "pathprof/core/hex.h"
#include "pathprof/profiles/accuracy.h"
#include "stream_profile_scoring.h"

namespace pathprof::pipeline {
namespace {

// Keys are compared as strings so that call pairs and methods share one ranking; `fill`
// gives a ranked entry its addresses as numbers.
template <typename K, typename KeyFn, typename FillFn>
CallRanking Rank(const std::vector<std::pair<K, uint64_t>>& exact_sorted,
                 const std::vector<std::pair<K, uint64_t>>& estimate_sorted, double scale,
                 size_t top, KeyFn key_of, FillFn fill) {
  CallRanking s;
  s.distinct_exact = exact_sorted.size();
  s.distinct_estimate = estimate_sorted.size();
  profiles::WeightedProfile<std::string> ew, sw;
  std::unordered_map<std::string, std::pair<size_t, double>> exact_of;
  for (size_t i = 0; i < exact_sorted.size(); ++i) {
    std::string k = key_of(exact_sorted[i].first);
    ew.emplace_back(k, static_cast<double>(exact_sorted[i].second));
    exact_of.emplace(std::move(k), std::make_pair(i + 1, double(exact_sorted[i].second)));
  }
  for (const auto& [key, w] : estimate_sorted) sw.emplace_back(key_of(key), double(w) * scale);
  s.overlap = profiles::OverlapPercent(ew, sw);
  s.hps_overlap = profiles::HpsOverlapPercent(ew, sw);
  for (size_t i = 0; i < sw.size() && i < top; ++i) {
    RankedCallKey r;
    r.key = sw[i].first;
    fill(estimate_sorted[i].first, &r);
    r.estimate = sw[i].second;
    if (auto it = exact_of.find(r.key); it != exact_of.end()) {
      r.exact_rank = it->second.first;
      r.exact = it->second.second;
    }
    s.top.push_back(r);
  }
  return s;
}

}  // namespace

CallRanking RankCallPairs(const profiles::HotCallPairs& exact,
                          const profiles::HotCallPairs& sampled, double scale, size_t top) {
  return Rank(
      exact.Top(exact.Shares().size()), sampled.Top(sampled.Shares().size()), scale, top,
      [](const profiles::CallPair& p) {
        return HexAddress(p.call_site) + "->" + HexAddress(p.target);
      },
      [](const profiles::CallPair& p, RankedCallKey* r) {
        r->from = p.call_site;
        r->to = p.target;
      });
}

CallRanking RankMethods(const profiles::HotMethods& exact, const profiles::HotMethods& sampled,
                        double scale, size_t top) {
  return Rank(
      exact.Top(exact.Shares().size()), sampled.Top(sampled.Shares().size()), scale, top,
      [](uint64_t f) { return HexAddress(f); }, [](uint64_t f, RankedCallKey* r) { r->to = f; });
}

}  // namespace pathprof::pipeline
