// Session's answers: each per-session query merged over the session's stores (shares rebased to
// the session's total), and the baselines residual paths are found against.
#include <algorithm>
#include <set>

#include "session_impl.h"

namespace pathprof::pipeline {

std::vector<std::shared_ptr<const ProfileStore>> Session::Stores() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::shared_ptr<const ProfileStore>> out;
  for (const auto& [pid, store] : impl_->stores) out.push_back(store);
  return out;
}

std::shared_ptr<const ProfileStore> Session::Store(uint32_t pid) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->stores.find(pid);
  return it == impl_->stores.end() ? nullptr : it->second;
}

HotPathsResult Session::HotPaths(const HotPathsQuery& query) const {
  HotPathsResult out;
  for (const auto& store : Stores()) {
    HotPathsResult r = store->HotPaths(query);
    out.total += r.total;
    out.paths_distinct += r.paths_distinct;
    out.as_of_unix_ms = std::max(out.as_of_unix_ms, r.as_of_unix_ms);
    if (out.estimator == PathEstimator::kNone) out.estimator = r.estimator;
    out.contexts_matched += r.contexts_matched;
    out.context_windows += r.context_windows;
    for (HotPath& p : r.paths) out.paths.push_back(std::move(p));
  }
  std::stable_sort(out.paths.begin(), out.paths.end(), [](const HotPath& a, const HotPath& b) {
    return a.estimate.value > b.estimate.value;
  });
  if (out.paths.size() > query.top_k) out.paths.resize(query.top_k);
  for (HotPath& p : out.paths) p.estimate.share = out.total > 0 ? p.estimate.value / out.total : 0;
  return out;
}

namespace {
// A process's share scaled to the session's basis: every process's total together, so that a
// table over several processes has one basis (its shares sum to at most 1), as its tree has.
double Rebased(double share, double process_basis, double session_basis) {
  return session_basis > 0 ? share * process_basis / session_basis : 0;
}
}  // namespace

HotSubpathsResult Session::HotSubpaths(const HotSubpathsQuery& query) const {
  HotSubpathsResult out;
  std::vector<HotSubpathsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotSubpaths(query));
    out.share_basis += per_process.back().share_basis;
  }
  for (HotSubpathsResult& r : per_process) {
    out.sampling_frequency = std::max(out.sampling_frequency, r.sampling_frequency);
    for (Subpath& p : r.subpaths) {
      p.estimate.share = Rebased(p.estimate.share, r.share_basis, out.share_basis);
      out.subpaths.push_back(std::move(p));
    }
  }
  std::stable_sort(
      out.subpaths.begin(), out.subpaths.end(),
      [](const Subpath& a, const Subpath& b) { return a.estimate.value > b.estimate.value; });
  if (query.threshold <= 0 && out.subpaths.size() > query.top_k) out.subpaths.resize(query.top_k);
  return out;
}

CallingContextTree Session::Cct(const CctQuery& query) const {
  CallingContextTree out;
  uint64_t base = 0;
  for (const auto& store : Stores()) {
    CallingContextTree t = store->Cct(query);
    out.total_weight += t.total_weight;
    out.samples += t.samples;
    uint64_t max_id = 0;
    for (CctNode& n : t.nodes) {
      max_id = std::max(max_id, n.id);
      n.id += base;
      if (n.parent_id != 0) n.parent_id += base;
      out.nodes.push_back(std::move(n));
    }
    base += max_id;
  }
  return out;
}

HotCallPairsResult Session::HotCallPairs(uint32_t top_k) const {
  HotCallPairsResult out;
  std::vector<HotCallPairsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotCallPairs(top_k));
    out.total += per_process.back().total;
  }
  for (HotCallPairsResult& r : per_process)
    for (CallPair& p : r.pairs) {
      p.estimate.share = Rebased(p.estimate.share, r.total, out.total);
      out.pairs.push_back(std::move(p));
    }
  std::stable_sort(out.pairs.begin(), out.pairs.end(), [](const CallPair& a, const CallPair& b) {
    return a.estimate.value > b.estimate.value;
  });
  if (out.pairs.size() > top_k) out.pairs.resize(top_k);
  return out;
}

HotMethodsResult Session::HotMethods(uint32_t top_k) const {
  HotMethodsResult out;
  std::vector<HotMethodsResult> per_process;
  for (const auto& store : Stores()) {
    per_process.push_back(store->HotMethods(top_k));
    out.self_total += per_process.back().self_total;
    out.entries_total += per_process.back().entries_total;
  }
  for (HotMethodsResult& r : per_process) {
    out.hot_data_streams_unsupported = r.hot_data_streams_unsupported;
    for (HotMethod& m : r.methods) {
      m.self.share = Rebased(m.self.share, r.self_total, out.self_total);
      m.entries.share = Rebased(m.entries.share, r.entries_total, out.entries_total);
      out.methods.push_back(std::move(m));
    }
  }
  std::stable_sort(out.methods.begin(), out.methods.end(),
                   [](const HotMethod& a, const HotMethod& b) {
                     return a.self.value != b.self.value ? a.self.value > b.self.value
                                                         : a.entries.value > b.entries.value;
                   });
  if (out.methods.size() > top_k) out.methods.resize(top_k);
  return out;
}

std::vector<TargetStats> Session::Stats() const {
  std::vector<TargetStats> out;
  for (const auto& store : Stores()) out.push_back(store->Stats());
  return out;
}

Result<uint64_t> Session::SaveBaseline(const std::string& name) {
  if (name.empty()) return Status(ErrorCode::kInvalidArgument, "baseline name is empty");
  std::set<PathKey> keys;
  for (const auto& store : Stores())
    for (const PathKey& k : store->PathKeys()) keys.insert(k);
  const uint64_t n = keys.size();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->baselines[name] = std::move(keys);
  return n;
}

Result<ResidualPathsResult> Session::ResidualPaths(const std::string& baseline,
                                                   uint32_t top_k) const {
  std::set<PathKey> base;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->baselines.find(baseline);
    if (it == impl_->baselines.end())
      return Status(ErrorCode::kNotFound, "no baseline named '" + baseline + "' in session " +
                                              impl_->id + "; save one first");
    base = it->second;
  }
  ResidualPathsResult out;
  HotPathsQuery q;
  q.top_k = UINT32_MAX;
  q.with_blocks = false;
  for (HotPath& p : HotPaths(q).paths) {
    const PathKey key{p.pid, p.start.address, p.length, p.outcomes};
    if (base.contains(key)) {
      ++out.known;
    } else if (out.residual.size() < top_k) {
      out.residual.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace pathprof::pipeline
