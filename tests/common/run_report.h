// `pathctl run --json`'s report (pathprof.v1.RunReport) read back, for tests that run pathctl.
#pragma once

#include <google/protobuf/util/json_util.h>

#include <string>

#include "pathprof/v1/reports.pb.h"

namespace pathprof::testing {

// The report; an empty one if `json` does not parse.
inline v1::RunReport ParseRunReport(const std::string& json) {
  v1::RunReport report;
  if (!google::protobuf::util::JsonStringToMessage(json, &report).ok()) report.Clear();
  return report;
}

// The share of the calling-context tree's weight under every node named `function`; -1 without
// a tree.
inline double ShareUnder(const std::string& json, const std::string& function) {
  const v1::RunReport report = ParseRunReport(json);
  const double total = report.cct().total_weight();
  if (total <= 0) return -1;
  double under = 0;
  for (const auto& node : report.cct().nodes())
    if (node.function().function() == function) under += node.total_weight();
  return under / total;
}

}  // namespace pathprof::testing
