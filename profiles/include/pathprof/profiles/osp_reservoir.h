// The per-process OSP reservoir (Oren, ch. 2.3.1 and 2.3.4): a concise sample (subpath id ->
// count) of the subpaths the threads' samplers pick, within a bound of m entries.
//
// Every subpath start is taken with probability 1/f. f starts at n / (m * G) (eq. 2.13, with a
// floor) and is raised online whenever a new id would not fit: f -> f * raise_factor, and each
// entry's count is thinned binomially with keep probability f_old / f_new, as in Gibbons and
// Matias' concise samples. A subpath that started under an older f is thinned the same way when
// it arrives, so each occurrence of a subpath ends up in the sample independently with
// probability P(length) / f (times the cost acceptance when rejection by cost is on), and
// count * f / P(length) is an unbiased estimate of its occurrences.
//
// Thread safety: samplers run on their own threads and call Insert() only when a sampled subpath
// completes (rarely: once per f blocks on average), so one mutex around the table is enough;
// bench/osp_bench.cc measures it. f and the lock-free counters are atomics, so the skip loop
// never takes the lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/osp_block_stream.h"
#include "pathprof/profiles/osp_encoding.h"
#include "pathprof/profiles/osp_lengths.h"

namespace pathprof::profiles {

struct OspConfig {
  size_t max_entries = 4096;     // m: distinct subpath ids kept at any moment
  double expected_blocks = 1e9;  // n in eq. 2.13: blocks the run is expected to execute
  double expected_gain = 8;      // G in eq. 2.13: expected mean count per id
  double min_f = 1;              // floor on f: sampling more often buys no accuracy (ch. 4.2)
  double raise_factor = 1.25;    // f grows by this factor per resampling step (> 1)
  OspEncoding encoding = OspEncoding::kCanonicalRotation;
  OspLengthDistribution lengths;  // default: P(2^n) ∝ 2^-n, lengths 2..1024
  uint64_t seed = 0x05b5eed;
  // A-priori block cost (ch. 5.1.2), e.g. instructions per block; empty = every block costs 1.
  std::function<double(BlockId)> block_cost;
  // With block_cost set and this on, a completed subpath is kept with probability
  // mean(block cost) / max_block_cost (ch. 5.1.2), so expensive subpaths get more samples;
  // estimates divide the acceptance back out.
  bool reject_by_cost = false;
  double max_block_cost = 0;  // beta_m; required > 0 when reject_by_cost
};

// f = n / (m * G) (eq. 2.13), at least config.min_f.
double InitialSamplingFrequency(const OspConfig& config);

struct OspStats {
  uint64_t blocks_seen = 0;        // blocks fed to all samplers (flushed at sample ends)
  uint64_t samples_started = 0;    // subpath starts taken
  uint64_t starts_thinned = 0;     // starts dropped because f rose since the skip was drawn
  uint64_t samples_completed = 0;  // subpaths that reached their length
  uint64_t samples_kept = 0;       // completed subpaths counted into the table
  uint64_t samples_thinned = 0;    // completed subpaths dropped because f rose meanwhile
  uint64_t samples_rejected_by_cost = 0;
  uint64_t dropped_at_gaps = 0;  // partial subpaths dropped at a stream gap
  uint64_t resamples = 0;        // times f was raised and the table thinned
  uint64_t entries_evicted = 0;  // ids whose count thinned to zero (resampling or aging)
  uint64_t agings = 0;
  double f = 0;               // current sampling frequency (start probability 1/f)
  size_t entries = 0;         // distinct ids in the table
  size_t max_entries = 0;     // m
  uint64_t sample_total = 0;  // sum of counts in the table
  size_t blocks_stored = 0;   // block ids held by the table's keys and representatives
  size_t memory_bytes = 0;    // approximate heap bytes of the table
};

// One table entry as copied out for reports.
struct OspSample {
  std::vector<BlockId> blocks;  // canonical rotation, or the first sequence seen with this id
  uint32_t length = 0;
  uint64_t count = 0;
  double acceptance = 1;      // probability it survived rejection by cost
  double block_cost_sum = 0;  // sum of the a-priori costs of `blocks` (length when no cost)
};

struct OspSnapshot {
  OspStats stats;
  std::vector<OspSample> samples;
};

class OspReservoir {
 public:
  static Result<std::unique_ptr<OspReservoir>> Create(OspConfig config);

  const OspConfig& config() const { return config_; }
  double f() const { return f_.load(std::memory_order_relaxed); }

  // Counts one completed subpath that started when the sampling frequency was f_at_start.
  void Insert(std::span<const BlockId> blocks, double f_at_start);

  // Exponential decay for long-running processes: every count is thinned binomially with keep
  // probability `keep` in (0, 1], so estimates afterwards weigh an old occurrence by keep^ages.
  Status Age(double keep);

  OspSnapshot Snapshot() const;
  OspStats stats() const;
  double BlockCost(BlockId block) const {
    return config_.block_cost ? config_.block_cost(block) : 1.0;
  }

  // Lock-free counters the samplers update.
  void AddBlocksSeen(uint64_t n) { blocks_seen_.fetch_add(n, std::memory_order_relaxed); }
  void CountStart() { samples_started_.fetch_add(1, std::memory_order_relaxed); }
  void CountStartThinned() { starts_thinned_.fetch_add(1, std::memory_order_relaxed); }
  void CountGapDrops(uint64_t n) { dropped_at_gaps_.fetch_add(n, std::memory_order_relaxed); }

 private:
  struct Entry {
    uint64_t count = 0;
    double acceptance = 1;
    std::vector<BlockId> representative;  // only for encodings whose key holds no blocks
  };

  explicit OspReservoir(OspConfig config);
  double UniformLocked();
  // Raises f once and thins the table; returns the keep probability used.
  double RaiseLocked();
  void ThinLocked(double keep);
  OspStats StatsLocked() const;

  const OspConfig config_;
  std::atomic<double> f_;
  std::atomic<uint64_t> blocks_seen_{0};
  std::atomic<uint64_t> samples_started_{0};
  std::atomic<uint64_t> starts_thinned_{0};
  std::atomic<uint64_t> dropped_at_gaps_{0};

  mutable std::mutex mu_;
  std::unordered_map<SubpathKey, Entry, SubpathKeyHash> table_;
  std::mt19937_64 rng_;
  OspStats counters_;  // the fields guarded by mu_
};

}  // namespace pathprof::profiles
