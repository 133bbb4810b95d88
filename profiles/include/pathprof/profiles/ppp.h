// Preferential path profiling ([Vaswani 2007] §3.3, figure 3.10; see docs/references.md): edge
// weights that give a chosen set of interesting paths compact, unique ids (0..k-1 when a perfect
// numbering is found), plus the alias check of section 3.2.3: an uninteresting path may share a
// PPP id with an interesting one, so each slot of the path array also stores the interesting
// path's Ball-Larus id, and a hit counts only when the path's Ball-Larus id matches.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/ball_larus.h"

namespace pathprof::profiles {

class PppNumbering {
 public:
  // Slot value in DensePathArray() for an id no interesting path received (a hole).
  static constexpr uint64_t kHole = UINT64_MAX;

  // `interesting` are Ball-Larus ids of `bl`, in any order, without duplicates, at least one.
  static Result<PppNumbering> Build(const BallLarus& bl, std::span<const uint64_t> interesting);

  // Weight of a DAG edge; nullopt for the edges no interesting path uses (the thesis's bottom),
  // which instrumentation leaves alone (they count as 0).
  std::optional<int64_t> weight(EdgeId dag_edge) const {
    if (!assigned_[dag_edge]) return std::nullopt;
    return weight_[dag_edge];
  }
  // All weights, unassigned ones as 0: what the PPP counter adds on each edge.
  const std::vector<int64_t>& weights() const { return weight_; }
  // PPP id of any start-to-exit path (interesting or not; may be negative or large).
  int64_t IdOf(std::span<const EdgeId> path) const;

  size_t num_interesting() const { return interesting_bl_.size(); }
  // Interesting path i (input order): its Ball-Larus id and its PPP id.
  uint64_t interesting_bl_id(size_t i) const { return interesting_bl_[i]; }
  int64_t interesting_ppp_id(size_t i) const { return interesting_ppp_[i]; }
  int64_t min_id() const { return min_id_; }
  int64_t max_id() const { return max_id_; }
  // Compactness (Problem A): (max id - min id + 1) / number of interesting paths; 1 is perfect.
  double delta() const {
    return static_cast<double>(max_id_ - min_id_ + 1) / static_cast<double>(num_interesting());
  }

  // The path array an instrumented program would index with the PPP counter: slot i (PPP id
  // min_id() + i) holds the Ball-Larus id of the interesting path numbered there, or kHole.
  // Fails when it would need more than `max_slots` slots (a poorly compact numbering).
  Result<std::vector<uint64_t>> DensePathArray(size_t max_slots) const;
  // Section 3.2.3's check for a path that just ran with counters (ppp_id, bl_id): the index of
  // the interesting path (input order) when it is one, nullopt when the PPP id falls outside
  // [min_id, max_id] (under/overflow), on a hole, or aliases an interesting path with another
  // Ball-Larus id.
  std::optional<size_t> Lookup(int64_t ppp_id, uint64_t bl_id) const;

  // The same weights moved onto the chords of `plan`'s spanning tree, so the PPP counter is
  // updated on the same edges as the Ball-Larus one (section 3.6, "counter optimizations").
  Result<ChordPlan> PlanChords(const PathDag& dag, std::span<const uint64_t> frequency = {}) const;

 private:
  std::vector<int64_t> weight_;
  std::vector<uint8_t> assigned_;
  std::vector<uint64_t> interesting_bl_;
  std::vector<int64_t> interesting_ppp_;
  int64_t min_id_ = 0;
  int64_t max_id_ = 0;
  // The interesting paths sorted by PPP id: the path array without its holes, so a numbering
  // with a large delta costs no memory.
  struct Slot {
    int64_t ppp_id;
    uint64_t bl_id;
    uint32_t index;
  };
  std::vector<Slot> by_ppp_id_;
};

}  // namespace pathprof::profiles
