// Unbiased path counts from bounded windows of a branch stream (docs/design.md §5).
//
// A window holds W consecutive taken branches (plus the not-taken branches between them). A path
// traversal spanning k taken branches (CompletedPath::TakenSpan) lies whole in W - k + 1 of the
// possible window positions, so counting whole paths favours short ones. Each whole path seen
// in a window is weighted sampling_period * W / (W - k + 1) (0 when k > W): a Horvitz-Thompson
// estimator, unbiased when window positions are uniform with mean spacing sampling_period * W
// taken branches. Partial paths (the first and last of each window) are dropped and counted.
//
// Confidence interval: window positions are treated as a Poisson sample (each position a window
// start independently, with probability pi = 1 / (sampling_period * W)). A path's estimate is the
// Horvitz-Thompson total X = sum_w c_w of its per-window contributions c_w, whose variance is
// estimated by sum_w (1 - pi) c_w^2; we drop (1 - pi) (pi <= 1/W), which errs on the wide side.
// The interval is X +- z * sqrt(Var) (normal approximation), clipped at 0. Periodic windows
// (SliceTakenWindows) can alias with periodic code; random ones (SliceRandomTakenWindows) match
// the assumption.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/operation_table.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/hwmodel/path_stack.h"

namespace pathprof::hwmodel {

// Where window starts fall, which sets each window's inclusion probability.
enum class WindowStarts : uint8_t {
  // Uniform over taken branches (LBR sampled on a taken-branch counter).
  kTakenBranches = 0,
  // Uniform over retired instructions: a timer interrupt (ptrace bursts), with instructions as
  // the proxy for time. A start lands in the gap before taken branch j with probability
  // g_j / S (g_j: instructions from taken branch j-1 through j; S: mean instructions between
  // starts), so a path spanning k taken branches is seen whole with probability
  // sum of g_s over its W - k + 1 start positions ~= (W - k + 1) * g_w / S, where g_w is the
  // window's own mean gap: (instructions after its first taken branch through its last) /
  // (W - 1). Horvitz-Thompson weight: S / (W * g_w) * W / (W - k + 1), i.e. the taken-branch
  // weight with sampling_period replaced by S / (W * g_w): windows from slow regions (more
  // instructions per taken branch, hence more interrupts) count less. Exact when the gap is
  // constant across each window's neighbourhood; see docs/profiles.md.
  kInstructions,
  // Uniform in time, each gap's duration given by the caller (AddWindow's `durations`, e.g. a
  // cycle model's estimate of the block each event ends): the kInstructions weighting with time
  // in place of instructions, so code that retires few instructions per cycle (a long
  // dependency chain) is not over-counted, which an instruction count cannot see.
  kTime,
};

// counted_prefix for ragged windows: against exact traces, 4 did best (docs/profiles.md).
inline constexpr uint32_t kRaggedCountedPrefix = 4;

struct WindowEstimatorConfig {
  PathStackConfig stack = BallLarusPreset();
  // kTakenBranches: stream taken branches per sampled taken branch (1 when windows tile the
  // whole stream). kInstructions / kTime: mean instructions / time between window starts (S
  // above); with shares only, any positive value does.
  double sampling_period = 1.0;
  WindowStarts starts = WindowStarts::kTakenBranches;
  double z = 1.96;  // confidence interval half-width in standard errors (1.96: 95%)
  // Ragged windows, whose length depends on where they start (snapshot windows end where the
  // snapshot runs out: at the first branch that depends on memory it did not copy). The
  // W - k + 1 weight assumes the windows that could have held a traversal were as long as the
  // one that did; when windows end at fixed places in the code, those that start earlier end at
  // the same place, so the traversals just after such a place are seen by fewer start
  // positions than W - k + 1 and those just before it by more (docs/profiles.md "Ragged
  // windows"). With counted_prefix = m > 0, a whole traversal counts only when its first taken
  // branch is among its window's first m, weighted by min(m, W - k + 1) start positions: exact
  // for every traversal that starts m or more taken branches after the last place windows end
  // (m = 1: for every traversal no such place interrupts), and never more positions than the
  // window's own length allows. m trades that bias for variance (m = 1 counts one traversal a
  // window at most); kRaggedCountedPrefix is the measured default. 0: off.
  uint32_t counted_prefix = 0;
  // The taken branches a window holds at most (the source's W); required with counted_prefix
  // (with kTakenBranches starts the spacing of window starts is sampling_period * window_cap).
  uint32_t window_cap = 0;

  Status Validate() const;
};

struct PathEstimate {
  PathDescriptor path;
  double estimate = 0;
  double std_error = 0;
  double ci_low = 0;
  double ci_high = 0;
  uint64_t observations = 0;  // whole traversals seen
};

struct WindowEstimatorStats {
  uint64_t windows = 0;
  uint64_t empty_windows = 0;   // no taken branch
  uint64_t whole_paths = 0;     // observations used
  uint64_t outside_window = 0;  // started before the first or ended after the last taken branch
  uint64_t beyond_prefix = 0;   // whole, but starting past counted_prefix: not counted
  // kInstructions and kTime: windows with fewer than 2 taken branches or no instruction counts
  // (durations), whose density is unknown; they add nothing to the estimates.
  uint64_t windows_without_density = 0;
  PathStackStats stack;  // summed over windows (unknown_start and truncated: partial)
};

class WindowEstimator {
 public:
  static Result<WindowEstimator> Create(const WindowEstimatorConfig& config);

  // One window; W is the number of taken branches in it. The path stack starts empty. With
  // kTime, durations[i] is how long the block events[i] ends took (any unit, the same for every
  // window); a window without them has no known density.
  void AddWindow(std::span<const BranchEvent> events, std::span<const double> durations = {});
  // The same, also telling `contribution` each path's share of this window: its Horvitz-Thompson
  // contribution and whole traversals (what the estimates add up), e.g. to keep per calling
  // context tables that sum to the process's estimates.
  using Contribution =
      std::function<void(const PathDescriptor& path, double contribution, uint64_t observations)>;
  void AddWindow(std::span<const BranchEvent> events, std::span<const double> durations,
                 const Contribution& contribution);
  // A batch is one window (whatever its gap_before / window flags say).
  void AddWindow(const BranchBatch& batch) { AddWindow(batch.events); }

  const WindowEstimatorStats& stats() const;
  // Estimates of every path seen, largest first.
  std::vector<PathEstimate> Estimates() const;
  // Estimate of one path (zero, with observations 0, when never seen).
  PathEstimate Estimate(const PathDescriptor& p) const;

 private:
  explicit WindowEstimator(const WindowEstimatorConfig& config, PathStack stack);

  struct Accumulator {
    double sum = 0;
    double sum_sq = 0;
    uint64_t observations = 0;
  };
  PathEstimate Finish(const PathDescriptor& p, const Accumulator& a) const;

  WindowEstimatorConfig config_;
  PathStack stack_;
  mutable WindowEstimatorStats stats_;
  std::unordered_map<PathDescriptor, Accumulator, PathDescriptorHash> totals_;
  struct WindowShare {
    double contribution = 0;
    uint64_t observations = 0;
  };
  std::unordered_map<PathDescriptor, WindowShare, PathDescriptorHash> window_;  // scratch
};

// Cuts LBR-like windows out of a continuous stream: window j holds taken branches
// [phase + j*spacing + 1, phase + j*spacing + W] (1-based ordinals) and the not-taken branches
// strictly between its first and last taken branch, as LBR reconstruction yields them.
// Returns event index ranges. Requires W >= 1 and spacing >= 1.
std::vector<std::pair<size_t, size_t>> SliceTakenWindows(std::span<const BranchEvent> events,
                                                         uint64_t window_taken, uint64_t spacing,
                                                         uint64_t phase);

// The same with window starts drawn independently: each taken branch starts a window with
// probability 1 / mean_spacing (seeded, reproducible). Windows may overlap. Matches the
// independence the confidence interval assumes; periodic windows can alias with periodic code.
std::vector<std::pair<size_t, size_t>> SliceRandomTakenWindows(std::span<const BranchEvent> events,
                                                               uint64_t window_taken,
                                                               double mean_spacing, uint64_t seed);

}  // namespace pathprof::hwmodel
