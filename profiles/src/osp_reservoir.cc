#include "pathprof/profiles/osp_reservoir.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pathprof::profiles {

namespace {

// Heap bytes of one table entry besides its block ids: the node (key, value, next pointer,
// cached hash) plus its bucket slot.
constexpr size_t kEntryOverheadBytes = sizeof(SubpathKey) + sizeof(uint64_t) + sizeof(double) +
                                       sizeof(std::vector<BlockId>) + 3 * sizeof(void*);

}  // namespace

double InitialSamplingFrequency(const OspConfig& config) {
  const double denom = static_cast<double>(config.max_entries) * config.expected_gain;
  const double f = denom > 0 ? config.expected_blocks / denom : config.min_f;
  return std::max(config.min_f, f);
}

Result<std::unique_ptr<OspReservoir>> OspReservoir::Create(OspConfig config) {
  auto bad = [](std::string what) { return Error(ErrorCode::kInvalidArgument, "osp: " + what); };
  if (config.max_entries == 0) return bad("max_entries (m) must be at least 1");
  if (!(config.expected_blocks >= 0) || !std::isfinite(config.expected_blocks)) {
    return bad("expected_blocks must be a finite non-negative number");
  }
  if (!(config.expected_gain > 0) || !std::isfinite(config.expected_gain)) {
    return bad("expected_gain (G) must be positive");
  }
  if (!(config.min_f >= 1) || !std::isfinite(config.min_f)) {
    return bad("min_f must be at least 1 (f is the inverse of a probability)");
  }
  if (!(config.raise_factor > 1) || !std::isfinite(config.raise_factor)) {
    return bad("raise_factor must be greater than 1, e.g. 1.25");
  }
  if (config.reject_by_cost && (!config.block_cost || !(config.max_block_cost > 0))) {
    return bad("reject_by_cost needs block_cost and a positive max_block_cost (beta_m)");
  }
  return std::unique_ptr<OspReservoir>(new OspReservoir(std::move(config)));
}

OspReservoir::OspReservoir(OspConfig config)
    : config_(std::move(config)), f_(InitialSamplingFrequency(config_)), rng_(config_.seed) {
  counters_.max_entries = config_.max_entries;
  table_.reserve(config_.max_entries);
}

double OspReservoir::UniformLocked() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void OspReservoir::ThinLocked(double keep) {
  for (auto it = table_.begin(); it != table_.end();) {
    Entry& e = it->second;
    std::binomial_distribution<uint64_t> thin(e.count, keep);
    const uint64_t kept = thin(rng_);
    counters_.sample_total -= e.count - kept;
    e.count = kept;
    if (kept == 0) {
      counters_.blocks_stored -= it->first.blocks.size() + e.representative.size();
      ++counters_.entries_evicted;
      it = table_.erase(it);
    } else {
      ++it;
    }
  }
}

double OspReservoir::RaiseLocked() {
  const double old_f = f_.load(std::memory_order_relaxed);
  const double new_f = old_f * config_.raise_factor;
  f_.store(new_f, std::memory_order_relaxed);
  ++counters_.resamples;
  const double keep = old_f / new_f;
  ThinLocked(keep);
  return keep;
}

void OspReservoir::Insert(std::span<const BlockId> blocks, double f_at_start) {
  if (blocks.empty()) return;
  SubpathKey key = EncodeSubpath(blocks, config_.encoding);
  double acceptance = 1;
  if (config_.reject_by_cost) {
    double sum = 0;
    for (BlockId b : blocks) sum += BlockCost(b);
    acceptance = std::min(1.0, sum / static_cast<double>(blocks.size()) / config_.max_block_cost);
  }

  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.samples_completed;
  if (acceptance < 1 && UniformLocked() >= acceptance) {
    ++counters_.samples_rejected_by_cost;
    return;
  }
  const double f_now = f_.load(std::memory_order_relaxed);
  if (f_at_start < f_now && UniformLocked() >= f_at_start / f_now) {
    ++counters_.samples_thinned;
    return;
  }
  auto it = table_.find(key);
  if (it != table_.end()) {
    ++it->second.count;
    ++counters_.sample_total;
    ++counters_.samples_kept;
    return;
  }
  // A new id must fit within m: raise f until the thinning frees a slot, thinning the newcomer
  // with the same keep probability so it is treated like every occurrence already counted.
  while (table_.size() >= config_.max_entries) {
    const double keep = RaiseLocked();
    if (UniformLocked() >= keep) {
      ++counters_.samples_thinned;
      return;
    }
  }
  Entry entry;
  entry.count = 1;
  entry.acceptance = acceptance;
  if (key.blocks.empty()) entry.representative.assign(blocks.begin(), blocks.end());
  counters_.blocks_stored += key.blocks.size() + entry.representative.size();
  table_.emplace(std::move(key), std::move(entry));
  ++counters_.sample_total;
  ++counters_.samples_kept;
}

Status OspReservoir::Age(double keep) {
  if (!(keep > 0 && keep <= 1)) {
    return Error(ErrorCode::kInvalidArgument,
                 "osp: aging keep factor " + std::to_string(keep) + " must be in (0, 1]");
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.agings;
  if (keep < 1) ThinLocked(keep);
  return Status::Ok();
}

OspStats OspReservoir::StatsLocked() const {
  OspStats s = counters_;
  s.blocks_seen = blocks_seen_.load(std::memory_order_relaxed);
  s.samples_started = samples_started_.load(std::memory_order_relaxed);
  s.starts_thinned = starts_thinned_.load(std::memory_order_relaxed);
  s.dropped_at_gaps = dropped_at_gaps_.load(std::memory_order_relaxed);
  s.f = f_.load(std::memory_order_relaxed);
  s.entries = table_.size();
  s.memory_bytes = table_.bucket_count() * sizeof(void*) + table_.size() * kEntryOverheadBytes +
                   s.blocks_stored * sizeof(BlockId);
  return s;
}

OspStats OspReservoir::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return StatsLocked();
}

OspSnapshot OspReservoir::Snapshot() const {
  OspSnapshot snap;
  std::lock_guard<std::mutex> lock(mu_);
  snap.stats = StatsLocked();
  snap.samples.reserve(table_.size());
  for (const auto& [key, entry] : table_) {
    OspSample s;
    s.blocks = key.blocks.empty() ? entry.representative : key.blocks;
    s.length = key.length;
    s.count = entry.count;
    s.acceptance = entry.acceptance;
    for (BlockId b : s.blocks) s.block_cost_sum += BlockCost(b);
    snap.samples.push_back(std::move(s));
  }
  return snap;
}

}  // namespace pathprof::profiles
