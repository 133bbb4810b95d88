// SessionConfig -> the hwmodel / profiles configurations it stands for.
#pragma once

#include "pathprof/hwmodel/hot_path_table.h"
#include "pathprof/hwmodel/operation_table.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::pipeline {

inline hwmodel::PathStackConfig PathStackConfigFor(const EngineSettings& e) {
  hwmodel::PathStackConfig c;
  switch (e.path_kind) {
    case PathKind::kBallLarus:
      c = hwmodel::BallLarusPreset();
      break;
    case PathKind::kWpp:
      c = hwmodel::WholeProgramPathPreset();
      break;
    case PathKind::kExtendedLoops:
      c = hwmodel::ExtendedLoopsPreset(static_cast<uint8_t>(e.extension));
      break;
    case PathKind::kExtendedCalls:
      c = hwmodel::ExtendedCallsPreset(static_cast<uint8_t>(e.extension));
      break;
  }
  c.max_path_length = static_cast<uint8_t>(e.max_path_length);
  return c;
}

inline hwmodel::HotPathTableConfig HotPathTableConfigFor(const EngineSettings& e) {
  hwmodel::HotPathTableConfig c;
  c.entries = e.hpt_entries;
  c.ways = e.hpt_ways;
  c.index = e.hpt_index_start_only ? hwmodel::HptIndex::kStart : hwmodel::HptIndex::kXor;
  c.replacement = e.hpt_lru ? hwmodel::HptReplacement::kLru : hwmodel::HptReplacement::kLfu;
  c.metric = e.metric;  // PathMetric is hwmodel::Metric
  return c;
}

}  // namespace pathprof::pipeline
