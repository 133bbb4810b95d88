// Residual path profiling ([Vaswani 2007] §3.5.1, see docs/references.md): the paths a baseline
// run (a test suite, an earlier profile) executed become PPP's interesting paths; a path executed
// now is known when the PPP counter lands on a path-array slot whose stored Ball-Larus id
// matches, and residual (never seen by the baseline) when the PPP id under/overflows the array,
// hits a hole, or aliases a baseline path with a different Ball-Larus id.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/ball_larus.h"
#include "pathprof/profiles/ppp.h"

namespace pathprof::profiles {

struct PathCount {
  uint64_t bl_id = 0;
  uint64_t count = 0;
};

struct ResidualPath {
  uint64_t bl_id = 0;
  int64_t ppp_id = 0;  // what the PPP counter read when the path ran
  uint64_t count = 0;
  std::string blocks;  // block names along the path, space separated
};

struct ResidualReport {
  std::vector<PathCount> known;        // baseline paths run now, by Ball-Larus id
  std::vector<ResidualPath> residual;  // paths the baseline never ran, hottest first
  uint64_t known_executions = 0;
  uint64_t residual_executions = 0;
};

class ResidualDetector {
 public:
  // `baseline`: Ball-Larus ids of the paths the baseline executed (no duplicates). An empty
  // baseline makes every path residual.
  static Result<ResidualDetector> Create(BallLarus bl, std::span<const uint64_t> baseline);
  // Same from a baseline profile; entries with count 0 were not executed and are not known.
  static Result<ResidualDetector> Create(BallLarus bl, std::span<const PathCount> baseline);

  const BallLarus& ball_larus() const { return bl_; }
  // nullopt when the baseline is empty.
  const std::optional<PppNumbering>& ppp() const { return ppp_; }

  // The check instrumented code makes when a path ends with counters (ppp_id, bl_id).
  bool IsKnown(int64_t ppp_id, uint64_t bl_id) const;
  // Records `count` executions of a start-to-exit DAG path.
  Status Record(std::span<const EdgeId> path, uint64_t count = 1);
  // Same for a path given by its Ball-Larus id.
  Status RecordId(uint64_t bl_id, uint64_t count = 1);
  ResidualReport Report() const;

 private:
  BallLarus bl_;
  std::optional<PppNumbering> ppp_;
  std::vector<uint64_t> known_counts_;  // per baseline path (PPP's interesting-path index)
  std::unordered_map<uint64_t, std::pair<int64_t, uint64_t>> residual_;  // bl id -> ppp id, count
};

// One shot: the residual paths of `current` against `baseline`.
Result<ResidualReport> FindResidualPaths(const BallLarus& bl, std::span<const PathCount> baseline,
                                         std::span<const PathCount> current);

}  // namespace pathprof::profiles
