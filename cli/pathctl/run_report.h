// pathctl run's report: every query's answer from its session once the run ended, printed as
// text for a person or as protobuf's JSON mapping of v1::RunReport (the messages the daemon
// serves).
#pragma once

#include <cstdint>
#include <vector>

#include "pathprof/pipeline/session.h"

namespace pathctl {

struct RunResults {
  pathprof::pipeline::SessionInfo info;
  pathprof::pipeline::HotPathsResult paths;
  pathprof::pipeline::HotSubpathsResult subpaths;
  pathprof::pipeline::HotCallPairsResult pairs;
  pathprof::pipeline::HotMethodsResult methods;
  pathprof::pipeline::CallingContextTree cct;
  std::vector<pathprof::pipeline::TargetStats> stats;
  int exit_status = -1;  // the command's; -1 for a --pid target
};

// `top` entries per table, and the top of the calling context tree.
RunResults CollectRunResults(const pathprof::pipeline::Session& session, uint32_t top,
                             int exit_status);
void PrintRunText(const RunResults& r);
void PrintRunJson(const RunResults& r);

}  // namespace pathctl
