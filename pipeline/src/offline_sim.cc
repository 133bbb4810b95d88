#include "pathprof/pipeline/offline_sim.h"

#include <algorithm>
#include <span>
#include <unordered_map>
#include <utility>

#include "pathprof/profiles/accuracy.h"
#include "sim_scoring.h"

namespace pathprof::pipeline {

using hwmodel::CompletedPath;
using hwmodel::PathDescriptor;

namespace {

std::vector<SimTopPath> TopPaths(const profiles::WeightedProfile<PathDescriptor>& estimate,
                                 const hwmodel::ExactPathProfile& exact, hwmodel::Metric m,
                                 size_t k) {
  auto sorted = exact.Sorted(m);
  std::unordered_map<PathDescriptor, size_t, hwmodel::PathDescriptorHash> rank;
  for (size_t i = 0; i < sorted.size(); ++i) rank.emplace(sorted[i].first, i + 1);
  double total = 0;
  for (const auto& [p, w] : estimate) total += w;
  auto order = estimate;
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<SimTopPath> rows;
  for (size_t i = 0; i < order.size() && i < k; ++i) {
    SimTopPath r;
    r.path = order[i].first;
    r.estimate = order[i].second;
    r.share = total > 0 ? r.estimate / total : 0;
    r.exact = static_cast<double>(exact.Get(r.path).Get(m));
    if (auto it = rank.find(r.path); it != rank.end()) r.exact_rank = it->second;
    r.relative_error = r.exact > 0 ? (r.estimate - r.exact) / r.exact : 0;
    rows.push_back(r);
  }
  return rows;
}

// The bars any estimate is measured against: the share of the exact profile in its hpt_valid
// heaviest paths (the best a table of that size can hold) and in its 100 heaviest.
void SetIdealShares(const hwmodel::ExactPathProfile& exact, hwmodel::Metric metric,
                    PathEngineSimResult* r) {
  auto sorted = exact.Sorted(metric);
  double total = static_cast<double>(exact.Total(metric)), acc = 0;
  for (size_t i = 0; i < sorted.size() && i < std::max<size_t>(r->hpt_valid, 100); ++i) {
    acc += static_cast<double>(sorted[i].second.Get(metric));
    if (i + 1 == 100) r->top100 = total > 0 ? 100 * acc / total : 0;
    if (i + 1 == r->hpt_valid) r->ideal_overlap = total > 0 ? 100 * acc / total : 0;
  }
  if (sorted.size() < 100) r->top100 = 100;
  if (sorted.size() < r->hpt_valid) r->ideal_overlap = 100;
}

}  // namespace

std::string_view SimModeName(SimMode mode) {
  return WordOf(kSimModeWords, mode);
}

struct PathEngineSim::Engines {
  Engines(const PathEngineSimOptions& o, hwmodel::PathStack stack, hwmodel::HotPathTable table,
          hwmodel::HotPathTable window_table)
      : options(o),
        exact_stack(std::move(stack)),
        hpt(std::move(table)),
        window_hpt(std::move(window_table)) {}

  void RecordSampled(const CompletedPath& c) {
    hpt.Record(c);
    window_hpt.Record(c);
  }
  void ProcessPiece(const BranchBatch& piece);
  void CloseWindow(bool partial);
  profiles::WeightedProfile<PathDescriptor> Estimate() const;
  void Score();

  PathEngineSimOptions options;
  PathEngineSimResult result;
  hwmodel::PathStack exact_stack;
  hwmodel::HotPathTable hpt;
  hwmodel::ExactPathProfile exact;
  // The current dynamic-overlap window: the estimate and the truth of its paths alone.
  hwmodel::HotPathTable window_hpt;
  hwmodel::ExactPathProfile window_exact;
  profiles::DynamicOverlap dynamic;
  std::optional<hwmodel::BurstyController> bursty;
  std::optional<hwmodel::PathStack> sampled_stack;  // the paths of the bursts
  std::optional<hwmodel::WindowEstimator> estimator;
  std::vector<BranchBatch> bursts;
};

void PathEngineSim::Engines::ProcessPiece(const BranchBatch& piece) {
  exact_stack.ProcessBatch(piece, [&](const CompletedPath& c) {
    exact.Record(c);
    window_exact.Record(c);
    if (!bursty && !estimator) RecordSampled(c);
  });
  if (bursty) {
    bursts.clear();
    bursty->Apply(piece, &bursts);
    for (const auto& b : bursts)
      sampled_stack->ProcessBatch(b, [&](const CompletedPath& c) { RecordSampled(c); });
  } else if (estimator) {
    const uint64_t window = options.window;
    auto spans = hwmodel::SliceTakenWindows(piece.events, window, window * options.period, 0);
    for (const auto& [b, e] : spans)
      estimator->AddWindow(std::span<const BranchEvent>(piece.events.data() + b, e - b));
  }
}

void PathEngineSim::Engines::CloseWindow(bool partial) {
  if (partial && dynamic.windows() > 0) return;  // only whole windows once there is one
  if (window_exact.size() == 0) return;
  dynamic.AddWindow(profiles::OverlapPercent(ExactWeights(window_exact, options.hpt.metric),
                                             HptWeights(window_hpt)));
  window_exact.Clear();
  window_hpt.Clear();
}

profiles::WeightedProfile<PathDescriptor> PathEngineSim::Engines::Estimate() const {
  profiles::WeightedProfile<PathDescriptor> estimate;
  if (estimator) {
    for (const auto& e : estimator->Estimates()) estimate.emplace_back(e.path, e.estimate);
    return estimate;
  }
  estimate = HptWeights(hpt);
  // Bursts see one tick in sampling_period: scale counts back to whole-stream estimates.
  if (bursty)
    for (auto& [p, w] : estimate) w *= result.sampling_period;
  return estimate;
}

void PathEngineSim::Engines::Score() {
  const hwmodel::Metric metric = options.hpt.metric;
  PathEngineSimResult& r = result;
  r.paths_distinct = exact.size();
  r.stack = exact_stack.stats();
  r.paths_completed = r.stack.paths;
  auto exact_w = ExactWeights(exact, metric);
  auto estimate = Estimate();
  if (!estimator) {
    r.table = hpt.stats();
    r.dynamic_overlap =
        dynamic.windows() ? std::optional<double>(dynamic.AveragePercent()) : std::nullopt;
    r.dynamic_windows = dynamic.windows();
  }
  r.hpt_valid = estimate.size();
  r.overlap = profiles::OverlapPercent(exact_w, estimate);
  r.hps_overlap = profiles::HpsOverlapPercent(exact_w, estimate);
  r.top = TopPaths(estimate, exact, metric, options.top);
  SetIdealShares(exact, metric, &r);
}

Result<PathEngineSim> PathEngineSim::Create(const PathEngineSimOptions& options) {
  auto stack = hwmodel::PathStack::Create(options.stack);
  auto hpt = hwmodel::HotPathTable::Create(options.hpt);
  if (!stack.ok() || !hpt.ok())
    return Error(ErrorCode::kInvalidArgument, "bad path or HPT configuration");
  auto e = std::make_unique<Engines>(options, std::move(stack).value(), std::move(hpt).value(),
                                     hwmodel::HotPathTable::Create(options.hpt).value());
  PathEngineSimResult& r = e->result;
  r.paths = hwmodel::PathStackConfigName(options.stack);
  r.hpt = options.hpt;
  r.dynamic_window = options.dynamic_window;
  if (options.bursty) {
    PATHPROF_ASSIGN_OR_RETURN(auto controller, hwmodel::BurstyController::Create(*options.bursty));
    e->bursty.emplace(std::move(controller));
    e->sampled_stack.emplace(hwmodel::PathStack::Create(options.stack).value());
    r.mode = SimMode::kBursty;
    r.sampling_period = options.bursty->SamplingPeriod();
  } else if (options.window > 0 || options.period > 0) {
    hwmodel::WindowEstimatorConfig wc;
    wc.stack = options.stack;
    wc.sampling_period = static_cast<double>(options.period);
    PATHPROF_ASSIGN_OR_RETURN(auto estimator, hwmodel::WindowEstimator::Create(wc));
    e->estimator.emplace(std::move(estimator));
    r.mode = SimMode::kWindow;
    r.sampling_period = static_cast<double>(options.period);
  }
  return PathEngineSim(std::move(e));
}

PathEngineSim::PathEngineSim(std::unique_ptr<Engines> engines) : engines_(std::move(engines)) {}
PathEngineSim::PathEngineSim(PathEngineSim&&) noexcept = default;
PathEngineSim& PathEngineSim::operator=(PathEngineSim&&) noexcept = default;
PathEngineSim::~PathEngineSim() = default;

Result<PathEngineSimResult> PathEngineSim::Run(const NextBatchFn& next) {
  Engines& e = *engines_;
  BranchBatch batch, piece;
  uint64_t in_window = 0;
  for (;;) {
    PATHPROF_ASSIGN_OR_RETURN(bool more, next(&batch));
    if (!more) break;
    e.result.branches += batch.events.size();
    SplitAtWindows(
        batch, e.options.dynamic_window, &in_window, &piece,
        [&](const BranchBatch& p) { e.ProcessPiece(p); }, [&] { e.CloseWindow(false); });
  }
  if (in_window > 0) e.CloseWindow(true);
  e.Score();
  return std::move(e.result);
}

}  // namespace pathprof::pipeline
