#include "pathprof/hwmodel/window_estimator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

namespace pathprof::hwmodel {

Status WindowEstimatorConfig::Validate() const {
  PATHPROF_RETURN_IF_ERROR(stack.Validate());
  if (!(sampling_period > 0) || !std::isfinite(sampling_period)) {
    return Error(ErrorCode::kInvalidArgument,
                 "window estimator: sampling_period must be a positive number (stream taken "
                 "branches per sampled taken branch), got " +
                     std::to_string(sampling_period));
  }
  if (!(z >= 0) || !std::isfinite(z)) {
    return Error(ErrorCode::kInvalidArgument, "window estimator: z must be >= 0");
  }
  if (counted_prefix > 0 && window_cap == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "window estimator: counted_prefix " + std::to_string(counted_prefix) +
                     " needs window_cap, the taken branches a window holds at most (the "
                     "source's window length)");
  }
  return Status::Ok();
}

Result<WindowEstimator> WindowEstimator::Create(const WindowEstimatorConfig& config) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  PATHPROF_ASSIGN_OR_RETURN(auto stack, PathStack::Create(config.stack));
  return WindowEstimator(config, std::move(stack));
}

WindowEstimator::WindowEstimator(const WindowEstimatorConfig& config, PathStack stack)
    : config_(config), stack_(std::move(stack)) {}

void WindowEstimator::AddWindow(std::span<const BranchEvent> events,
                                std::span<const double> durations) {
  AddWindow(events, durations, Contribution{});
}

void WindowEstimator::AddWindow(std::span<const BranchEvent> events,
                                std::span<const double> durations,
                                const Contribution& contribution) {
  stack_.Reset();
  stats_.windows += 1;
  uint64_t w = 0;
  for (const BranchEvent& e : events) w += e.taken ? 1 : 0;
  if (w == 0) {
    stats_.empty_windows += 1;
    return;
  }
  window_.clear();
  const double width = static_cast<double>(w);
  // Stream taken branches (kTakenBranches) or time (kTime, kInstructions) between window
  // starts, per start position: what one observation stands for before the span correction.
  double period = config_.sampling_period;
  if (config_.starts != WindowStarts::kTakenBranches) {
    // Mean gap over the W - 1 whole gaps: events after the first taken branch through the last.
    const bool by_time = config_.starts == WindowStarts::kTime;
    if (by_time && durations.size() != events.size()) {
      stats_.windows_without_density += 1;
      return;
    }
    uint64_t seen = 0;
    double gap = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      if (seen >= 1 && seen < w) gap += by_time ? durations[i] : events[i].instructions;
      seen += events[i].taken ? 1 : 0;
    }
    if (w < 2 || !(gap > 0)) {
      stats_.windows_without_density += 1;
      return;
    }
    const double mean_gap = gap / (width - 1);
    period = config_.sampling_period / (width * mean_gap);
  }
  for (const BranchEvent& e : events) {
    stack_.Process(e, [&](const CompletedPath& c) {
      if (c.first_taken == 0 || c.last_taken > w) {
        // Its first or last taken branch lies outside the window: the window could not have
        // held it whole, so counting it would break the W - k + 1 weighting.
        stats_.outside_window += 1;
        return;
      }
      const double k = static_cast<double>(c.TakenSpan());
      double weight = period * width / (width - k + 1);
      if (config_.counted_prefix > 0) {
        if (c.first_taken > config_.counted_prefix) {
          stats_.beyond_prefix += 1;
          return;
        }
        // Of the m start positions up to the traversal's first taken branch, the window shows
        // that its own start and every later one hold it whole; the earlier ones hold it only
        // if nothing ends their windows before this one's start. Their number is taken as the
        // room this window had after the traversal (W - k + 1 in all): no more positions than
        // the window's own length allows, so a short window's traversals do not look colder
        // than a long one's (docs/profiles.md "Ragged windows").
        const double positions =
            std::min(static_cast<double>(config_.counted_prefix), width - k + 1);
        const double cap = static_cast<double>(config_.window_cap);
        const double spacing = config_.starts == WindowStarts::kTakenBranches
                                   ? config_.sampling_period * cap
                                   : period * width;
        weight = spacing / positions;
      }
      WindowShare& share = window_[c.path];
      share.contribution += weight;
      share.observations += 1;
      totals_[c.path].observations += 1;
      stats_.whole_paths += 1;
    });
  }
  for (const auto& [path, share] : window_) {
    Accumulator& a = totals_[path];
    a.sum += share.contribution;
    a.sum_sq += share.contribution * share.contribution;
    if (contribution) contribution(path, share.contribution, share.observations);
  }
}

const WindowEstimatorStats& WindowEstimator::stats() const {
  stats_.stack = stack_.stats();
  return stats_;
}

PathEstimate WindowEstimator::Finish(const PathDescriptor& p, const Accumulator& a) const {
  PathEstimate e;
  e.path = p;
  e.estimate = a.sum;
  e.observations = a.observations;
  // Horvitz-Thompson variance under Poisson sampling of window positions: sum of c_w^2 over
  // the windows that saw the path, without the (1 - pi) factor (pi <= 1/W): conservative.
  e.std_error = std::sqrt(a.sum_sq);
  e.ci_low = std::max(0.0, e.estimate - config_.z * e.std_error);
  e.ci_high = e.estimate + config_.z * e.std_error;
  return e;
}

std::vector<PathEstimate> WindowEstimator::Estimates() const {
  std::vector<PathEstimate> out;
  out.reserve(totals_.size());
  for (const auto& [path, acc] : totals_) out.push_back(Finish(path, acc));
  std::sort(out.begin(), out.end(), [](const PathEstimate& a, const PathEstimate& b) {
    if (a.estimate != b.estimate) return a.estimate > b.estimate;
    return std::tie(a.path.start, a.path.length, a.path.outcomes) <
           std::tie(b.path.start, b.path.length, b.path.outcomes);
  });
  return out;
}

PathEstimate WindowEstimator::Estimate(const PathDescriptor& p) const {
  auto it = totals_.find(p);
  return it == totals_.end() ? Finish(p, Accumulator{}) : Finish(p, it->second);
}

std::vector<std::pair<size_t, size_t>> SliceTakenWindows(std::span<const BranchEvent> events,
                                                         uint64_t window_taken, uint64_t spacing,
                                                         uint64_t phase) {
  std::vector<std::pair<size_t, size_t>> out;
  if (window_taken == 0 || spacing == 0) return out;
  std::vector<size_t> taken_index;  // taken_index[t - 1] = event index of taken ordinal t
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].taken) taken_index.push_back(i);
  }
  for (uint64_t first = phase + 1; first + window_taken - 1 <= taken_index.size();
       first += spacing) {
    out.emplace_back(taken_index[first - 1], taken_index[first + window_taken - 2] + 1);
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> SliceRandomTakenWindows(std::span<const BranchEvent> events,
                                                               uint64_t window_taken,
                                                               double mean_spacing, uint64_t seed) {
  std::vector<std::pair<size_t, size_t>> out;
  if (window_taken == 0 || !(mean_spacing >= 1)) return out;
  std::vector<size_t> taken_index;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].taken) taken_index.push_back(i);
  }
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution starts(1.0 / mean_spacing);
  for (uint64_t first = 1; first + window_taken - 1 <= taken_index.size(); ++first) {
    if (starts(rng)) {
      out.emplace_back(taken_index[first - 1], taken_index[first + window_taken - 2] + 1);
    }
  }
  return out;
}

}  // namespace pathprof::hwmodel
