#include "pathprof/profiles/residual.h"

#include <algorithm>

namespace pathprof::profiles {

namespace {

Status AddCount(uint64_t& total, uint64_t count) {
  if (__builtin_add_overflow(total, count, &total)) {
    return Error(ErrorCode::kResourceExhausted,
                 "residual: a path's execution count overflowed 64 bits");
  }
  return Status::Ok();
}

}  // namespace

Result<ResidualDetector> ResidualDetector::Create(BallLarus bl,
                                                  std::span<const uint64_t> baseline) {
  ResidualDetector detector;
  if (!baseline.empty()) {
    PATHPROF_ASSIGN_OR_RETURN(PppNumbering ppp, PppNumbering::Build(bl, baseline));
    detector.ppp_ = std::move(ppp);
    detector.known_counts_.assign(baseline.size(), 0);
  }
  detector.bl_ = std::move(bl);
  return detector;
}

Result<ResidualDetector> ResidualDetector::Create(BallLarus bl,
                                                  std::span<const PathCount> baseline) {
  std::vector<uint64_t> ids;
  ids.reserve(baseline.size());
  for (const PathCount& p : baseline) {
    if (p.count != 0) ids.push_back(p.bl_id);
  }
  return Create(std::move(bl), ids);
}

bool ResidualDetector::IsKnown(int64_t ppp_id, uint64_t bl_id) const {
  return ppp_.has_value() && ppp_->Lookup(ppp_id, bl_id).has_value();
}

Status ResidualDetector::Record(std::span<const EdgeId> path, uint64_t count) {
  PATHPROF_ASSIGN_OR_RETURN(uint64_t bl_id, bl_.IdOf(path));
  const int64_t ppp_id = ppp_.has_value() ? ppp_->IdOf(path) : 0;
  if (ppp_.has_value()) {
    if (std::optional<size_t> slot = ppp_->Lookup(ppp_id, bl_id)) {
      return AddCount(known_counts_[*slot], count);
    }
  }
  auto [it, inserted] = residual_.try_emplace(bl_id, ppp_id, 0);
  return AddCount(it->second.second, count);
}

Status ResidualDetector::RecordId(uint64_t bl_id, uint64_t count) {
  PATHPROF_ASSIGN_OR_RETURN(DagPath path, bl_.PathOf(bl_id));
  return Record(path, count);
}

ResidualReport ResidualDetector::Report() const {
  ResidualReport report;
  for (size_t i = 0; i < known_counts_.size(); ++i) {
    if (known_counts_[i] == 0) continue;
    report.known.push_back(PathCount{ppp_->interesting_bl_id(i), known_counts_[i]});
    report.known_executions += known_counts_[i];
  }
  std::sort(report.known.begin(), report.known.end(),
            [](const PathCount& a, const PathCount& b) { return a.bl_id < b.bl_id; });
  for (const auto& [bl_id, entry] : residual_) {
    ResidualPath path{bl_id, entry.first, entry.second, ""};
    if (Result<DagPath> dag_path = bl_.PathOf(bl_id); dag_path.ok()) {
      path.blocks = bl_.Describe(*dag_path);
    }
    report.residual.push_back(std::move(path));
    report.residual_executions += entry.second;
  }
  std::sort(report.residual.begin(), report.residual.end(),
            [](const ResidualPath& a, const ResidualPath& b) {
              return a.count != b.count ? a.count > b.count : a.bl_id < b.bl_id;
            });
  return report;
}

Result<ResidualReport> FindResidualPaths(const BallLarus& bl, std::span<const PathCount> baseline,
                                         std::span<const PathCount> current) {
  PATHPROF_ASSIGN_OR_RETURN(ResidualDetector detector, ResidualDetector::Create(bl, baseline));
  for (const PathCount& p : current) {
    if (p.count == 0) continue;
    PATHPROF_RETURN_IF_ERROR(detector.RecordId(p.bl_id, p.count));
  }
  return detector.Report();
}

}  // namespace pathprof::profiles
