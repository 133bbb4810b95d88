// ProfileStore's branch queries: hot paths (window estimator, Hot Path Table, or the windows of
// chosen calling contexts), the paths held (for baselines) and OSP subpaths.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "pathprof/core/clock.h"
#include "pathprof/profiles/osp_report.h"
#include "profile_store_impl.h"

namespace pathprof::pipeline {

std::string_view PathEstimatorName(PathEstimator e) {
  return WordOf(kPathEstimatorWords, e, "");
}

using ContextTally = WindowContexts::PathTally;

HotPathsResult ProfileStore::HotPaths(const HotPathsQuery& query) const {
  const Impl& s = *impl_;
  HotPathsResult out;
  out.as_of_unix_ms = UnixMs();
  struct RowContext {
    ContextKey key;
    profiles::PcctNodeId node;
    ContextTally tally;
  };
  struct Row {
    hwmodel::PathDescriptor path;
    double value, half_width;
    uint64_t observations;
    std::vector<uint64_t> blocks;
    std::vector<RowContext> contexts = {};
    double contexts_total = 0;
  };
  std::vector<Row> rows;
  decoders::AddressSpace space;
  std::string comm;  // the process's name, as of the snapshot
  PathMetric metric = query.metric;
  std::vector<ContextKey> chosen;
  if (query.context) {
    if (query.context->pid != 0 && query.context->pid != s.pid) return out;
    chosen = s.SelectContexts(*query.context);
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    space = s.space;
    comm = s.info.comm;
    if (query.context) {
      // The windows attributed to the chosen contexts, their paths summed over them.
      out.estimator = PathEstimator::kWindows;
      metric = PathMetric::kCount;
      std::unordered_map<hwmodel::PathDescriptor, WindowContexts::PathTally,
                         hwmodel::PathDescriptorHash>
          sum;
      for (const ContextKey& k : chosen) {
        const WindowContexts::Context* c = s.contexts.Find(k);
        if (c == nullptr) continue;
        ++out.contexts_matched;
        out.context_windows += c->windows;
        out.total += c->weight;
        for (const auto& [path, t] : c->paths) {
          WindowContexts::PathTally& into = sum[path];
          into.sum += t.sum;
          into.sum_sq += t.sum_sq;
          into.observations += t.observations;
        }
      }
      out.paths_distinct = sum.size();
      std::vector<std::pair<hwmodel::PathDescriptor, WindowContexts::PathTally>> sorted(sum.begin(),
                                                                                        sum.end());
      std::sort(sorted.begin(), sorted.end(),
                [](const auto& a, const auto& b) { return a.second.sum > b.second.sum; });
      const double z = 1.96;  // the window estimator's 95% interval (window_estimator.h)
      for (size_t i = 0; i < sorted.size() && rows.size() < query.top_k; ++i)
        rows.push_back({sorted[i].first,
                        sorted[i].second.sum,
                        z * std::sqrt(sorted[i].second.sum_sq),
                        sorted[i].second.observations,
                        {}});
    } else if (s.estimator && metric == PathMetric::kCount) {
      out.estimator = PathEstimator::kWindows;
      const auto est = s.estimator->Estimates();
      out.paths_distinct = est.size();
      for (const auto& e : est) out.total += e.estimate;
      for (size_t i = 0; i < est.size() && rows.size() < query.top_k; ++i) {
        rows.push_back({est[i].path,
                        est[i].estimate,
                        (est[i].ci_high - est[i].ci_low) / 2,
                        est[i].observations,
                        {}});
      }
    } else {
      out.estimator = PathEstimator::kHotPathTable;
      // The table accumulates one metric, fixed when the session started.
      metric = s.config.engine.metric;
      const auto sorted = s.hpt->Sorted();
      out.paths_distinct = sorted.size();
      out.total = static_cast<double>(s.hpt->Total());
      for (size_t i = 0; i < sorted.size() && rows.size() < query.top_k; ++i)
        rows.push_back({sorted[i].path, double(sorted[i].value), 0, sorted[i].value, {}});
    }
    if (query.contexts_per_path > 0) {
      // Each row's contexts, heaviest first: a scan of the (bounded) context table per row.
      for (Row& r : rows) {
        double path_total = 0;
        for (const auto& c : s.ContextsOfLocked(r.path)) {
          path_total += c.tally.sum;
          r.contexts.push_back({c.key, s.LiveNodeLocked(c.key, c.node), c.tally});
        }
        std::sort(r.contexts.begin(), r.contexts.end(),
                  [](const auto& a, const auto& b) { return a.tally.sum > b.tally.sum; });
        if (r.contexts.size() > query.contexts_per_path) r.contexts.resize(query.contexts_per_path);
        r.contexts_total = path_total;
      }
    }
    if (query.with_blocks) {
      for (Row& r : rows) {
        auto it = s.representatives.find(r.path);
        r.blocks = it != s.representatives.end() ? it->second : std::vector<uint64_t>{r.path.start};
      }
    }
  }
  for (Row& r : rows) {
    HotPath p;
    p.pid = s.pid;
    p.comm = comm;
    p.start = s.symbols->Symbolize(s.pid, space, r.path.start);
    p.length = r.path.length;
    p.outcomes = r.path.outcomes;
    p.metric = metric;
    p.estimate.value = r.value;
    p.estimate.error_bound = r.half_width;
    p.estimate.confidence = r.half_width > 0 ? kConfidence95 : 0;
    p.estimate.share = out.total > 0 ? r.value / out.total : 0;
    p.observations = r.observations;
    p.blocks = s.SymbolizeAll(space, r.blocks);
    for (const RowContext& rc : r.contexts) {
      PathContext pc;
      pc.node = rc.node == profiles::kPcctNoNode ? 0 : rc.node;
      pc.truncated = rc.key.truncated;
      for (auto f = rc.key.frames.rbegin(); f != rc.key.frames.rend(); ++f)
        pc.functions.push_back(s.symbols->Symbolize(s.pid, space, f->function));
      pc.estimate.value = rc.tally.sum;
      pc.estimate.error_bound = 1.96 * std::sqrt(rc.tally.sum_sq);
      pc.estimate.confidence = pc.estimate.error_bound > 0 ? kConfidence95 : 0;
      pc.estimate.share = r.contexts_total > 0 ? rc.tally.sum / r.contexts_total : 0;
      pc.observations = rc.tally.observations;
      p.contexts.push_back(std::move(pc));
    }
    out.paths.push_back(std::move(p));
  }
  return out;
}

std::vector<PathKey> ProfileStore::PathKeys() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<PathKey> keys;
  auto add = [&](const hwmodel::PathDescriptor& p) {
    keys.push_back({s.pid, p.start, p.length, p.outcomes});
  };
  if (s.estimator) {
    for (const auto& e : s.estimator->Estimates()) add(e.path);
  } else {
    for (const auto& e : s.hpt->Sorted()) add(e.path);
  }
  return keys;
}

HotSubpathsResult ProfileStore::HotSubpaths(const HotSubpathsQuery& query) const {
  const Impl& s = *impl_;
  HotSubpathsResult out;
  profiles::OspReportOptions options;
  options.top_k = query.threshold > 0 ? 0 : query.top_k;
  options.confidence = s.config.osp.confidence;
  // The report is built under the lock that Add holds while it feeds the reservoir (a
  // consistent snapshot); naming its blocks, the slow part, happens after.
  Result<profiles::OspReport> report = Status(ErrorCode::kInternal, "no report");
  decoders::AddressSpace space;
  std::string comm;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    report = profiles::BuildOspReport(*s.osp, options);
    comm = s.info.comm;
    space = s.space;
  }
  if (!report.ok()) return out;
  out.sampling_frequency = report->stats.f;
  double total = 0;
  for (const auto& e : report->entries) total += e.metric;
  out.share_basis = total;
  for (const auto& e : report->entries) {
    const double share = total > 0 ? e.metric / total : 0;
    if (query.threshold > 0 && share < query.threshold) continue;
    Subpath sp;
    sp.pid = s.pid;
    sp.comm = comm;
    sp.length = e.length;
    sp.blocks = s.SymbolizeAll(space, e.blocks);
    sp.estimate.value = e.estimated_count;
    sp.estimate.error_bound =
        std::isfinite(e.relative_error) ? e.estimated_count * e.relative_error : e.estimated_count;
    sp.estimate.confidence = s.config.osp.confidence;
    sp.estimate.share = share;
    out.subpaths.push_back(std::move(sp));
  }
  return out;
}

}  // namespace pathprof::pipeline
