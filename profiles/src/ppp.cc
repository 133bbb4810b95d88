// computePPPIncrements (figure 3.10). Prefixes are keyed as in the thesis's implementation
// (section 3.6): by the Ball-Larus sum along the prefix, which is unique among the prefixes that
// end at one node, and the cis map is kept per node since a prefix only matters at its last node.
#include "pathprof/profiles/ppp.h"

#include <algorithm>
#include <unordered_map>

namespace pathprof::profiles {

namespace {

struct Visit {
  uint64_t prefix;  // Ball-Larus sum from the start to the edge's source along the path
  uint32_t path;    // index into the interesting paths
};

Status Overflow() {
  return Error(ErrorCode::kResourceExhausted,
               "ppp: path ids left the 64-bit range; profile fewer interesting paths per function");
}

}  // namespace

Result<PppNumbering> PppNumbering::Build(const BallLarus& bl,
                                         std::span<const uint64_t> interesting) {
  const PathDag& dag = bl.dag();
  if (interesting.empty()) {
    return Error(ErrorCode::kInvalidArgument, "ppp: no interesting paths; give at least one");
  }
  if (interesting.size() >= UINT32_MAX) {
    return Error(ErrorCode::kResourceExhausted, "ppp: too many interesting paths");
  }
  {
    std::vector<uint64_t> sorted(interesting.begin(), interesting.end());
    std::sort(sorted.begin(), sorted.end());
    if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
      return Error(ErrorCode::kInvalidArgument,
                   "ppp: Ball-Larus id " + std::to_string(*dup) +
                       " is listed twice among the interesting paths; list each path once");
    }
  }

  // Per DAG edge, the interesting paths through it with their prefixes (CSR layout).
  const size_t num_edges = dag.edges().size();
  std::vector<DagPath> paths;
  paths.reserve(interesting.size());
  std::vector<uint32_t> start(num_edges + 1, 0);
  for (uint64_t id : interesting) {
    PATHPROF_ASSIGN_OR_RETURN(DagPath path, bl.PathOf(id));
    for (EdgeId e : path) ++start[e + 1];
    paths.push_back(std::move(path));
  }
  for (size_t e = 0; e < num_edges; ++e) start[e + 1] += start[e];
  std::vector<Visit> visits(start[num_edges]);
  {
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (uint32_t p = 0; p < paths.size(); ++p) {
      uint64_t prefix = 0;
      for (EdgeId e : paths[p]) {
        visits[fill[e]++] = Visit{prefix, p};
        prefix += bl.value(e);
      }
    }
  }

  PppNumbering ppp;
  ppp.weight_.assign(num_edges, 0);
  ppp.assigned_.assign(num_edges, 0);
  std::vector<int64_t> pid(paths.size(), 0);
  std::unordered_map<uint64_t, int64_t> cis;  // cumulative interval size per prefix at this node
  const auto& topo = dag.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    cis.clear();
    for (EdgeId e : dag.out_edges(*it)) {
      if (start[e] == start[e + 1]) continue;  // no interesting path: weight stays bottom
      std::span<Visit> through(visits.data() + start[e], visits.data() + start[e + 1]);
      std::sort(through.begin(), through.end(),
                [](const Visit& a, const Visit& b) { return a.prefix < b.prefix; });
      // Lines 3-12: the weight each prefix needs to clear its earlier intervals; join = max.
      bool have = false;
      int64_t w = 0;
      for (size_t i = 0; i < through.size();) {
        const uint64_t q = through[i].prefix;
        int64_t lo = pid[through[i].path];
        for (; i < through.size() && through[i].prefix == q; ++i) {
          lo = std::min(lo, pid[through[i].path]);
        }
        auto found = cis.find(q);
        int64_t need;
        if (__builtin_sub_overflow(found == cis.end() ? 0 : found->second, lo, &need)) {
          return Overflow();
        }
        if (!have || need > w) w = need;
        have = true;
      }
      ppp.weight_[e] = w;
      ppp.assigned_[e] = 1;
      // Lines 13-20: move the paths by w and record how far each prefix's interval now reaches.
      for (size_t i = 0; i < through.size();) {
        const uint64_t q = through[i].prefix;
        int64_t hi = INT64_MIN;
        for (; i < through.size() && through[i].prefix == q; ++i) {
          int64_t& p = pid[through[i].path];
          if (__builtin_add_overflow(p, w, &p)) return Overflow();
          hi = std::max(hi, p);
        }
        if (hi == INT64_MAX) return Overflow();
        cis[q] = hi + 1;
      }
    }
  }

  ppp.interesting_bl_.assign(interesting.begin(), interesting.end());
  ppp.interesting_ppp_ = std::move(pid);
  ppp.by_ppp_id_.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    ppp.by_ppp_id_.push_back(
        Slot{ppp.interesting_ppp_[i], ppp.interesting_bl_[i], static_cast<uint32_t>(i)});
  }
  std::sort(ppp.by_ppp_id_.begin(), ppp.by_ppp_id_.end(),
            [](const Slot& a, const Slot& b) { return a.ppp_id < b.ppp_id; });
  for (size_t i = 1; i < ppp.by_ppp_id_.size(); ++i) {
    if (ppp.by_ppp_id_[i].ppp_id == ppp.by_ppp_id_[i - 1].ppp_id) {
      // Lemma 3.3.4 guarantees distinct ids; this guards the implementation, not the input.
      return Error(ErrorCode::kInternal, "ppp: two interesting paths received PPP id " +
                                             std::to_string(ppp.by_ppp_id_[i].ppp_id));
    }
  }
  ppp.min_id_ = ppp.by_ppp_id_.front().ppp_id;
  ppp.max_id_ = ppp.by_ppp_id_.back().ppp_id;
  int64_t range;
  if (__builtin_sub_overflow(ppp.max_id_, ppp.min_id_, &range) || range == INT64_MAX) {
    return Overflow();
  }
  return ppp;
}

int64_t PppNumbering::IdOf(std::span<const EdgeId> path) const {
  uint64_t sum = 0;  // wraps like the hardware counter would; exact whenever the id fits
  for (EdgeId e : path) sum += static_cast<uint64_t>(weight_[e]);
  return static_cast<int64_t>(sum);
}

std::optional<size_t> PppNumbering::Lookup(int64_t ppp_id, uint64_t bl_id) const {
  if (ppp_id < min_id_ || ppp_id > max_id_) return std::nullopt;  // under/overflow check
  auto it = std::lower_bound(by_ppp_id_.begin(), by_ppp_id_.end(), ppp_id,
                             [](const Slot& s, int64_t id) { return s.ppp_id < id; });
  if (it == by_ppp_id_.end() || it->ppp_id != ppp_id) return std::nullopt;  // a hole
  if (it->bl_id != bl_id) return std::nullopt;                              // an alias
  return it->index;
}

Result<std::vector<uint64_t>> PppNumbering::DensePathArray(size_t max_slots) const {
  const uint64_t slots = static_cast<uint64_t>(max_id_ - min_id_) + 1;
  if (slots > max_slots) {
    return Error(ErrorCode::kResourceExhausted,
                 "ppp: the path array would need " + std::to_string(slots) + " slots (delta " +
                     std::to_string(delta()) + "), more than the " + std::to_string(max_slots) +
                     " allowed; use Lookup instead");
  }
  std::vector<uint64_t> array(slots, kHole);
  for (const Slot& s : by_ppp_id_) array[s.ppp_id - min_id_] = s.bl_id;
  return array;
}

Result<ChordPlan> PppNumbering::PlanChords(const PathDag& dag,
                                           std::span<const uint64_t> frequency) const {
  std::vector<uint64_t> values(weight_.begin(), weight_.end());
  return PlaceOnChords(dag, values, frequency);
}

}  // namespace pathprof::profiles
