// The snapshot-windows source (live_source_snapshot.cc), declared for the source built on it:
// the hybrid source runs one and tells its collector which processes' windows it takes
// elsewhere.
#pragma once

#include <memory>
#include <string>

#include "pathprof/collectors/snapshot_windows.h"
#include "pathprof/pipeline/live_source.h"

namespace pathprof::pipeline {

class SnapshotSource final : public LiveSource {
 public:
  Status Start(const SourceTargets& targets, SourceSink& sink) override;
  std::string Detail() const override { return detail_; }
  SourceCounters Counters() const override;
  std::string Failure() const override;
  void ProcessGone(uint32_t pid) override;
  void Stop() override;

  // After a successful Start; null before.
  collectors::SnapshotWindowCollector* collector() const { return collector_.get(); }

 private:
  std::unique_ptr<collectors::SnapshotWindowCollector> collector_;
  std::string detail_;
};

}  // namespace pathprof::pipeline
