// Pipeline results and settings <-> pathprof.v1 messages. One function per message; no logic
// beyond field mapping and enum translation.
#pragma once

#include "pathprof/pipeline/results.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::daemon {

void ToProto(const pipeline::Location& in, v1::Location* out);
void ToProto(const pipeline::Estimate& in, v1::Estimate* out);
void ToProto(const pipeline::HotPath& in, v1::HotPath* out);
void ToProto(const pipeline::SessionInfo& in, v1::Session* out);
void ToProto(const pipeline::TargetStats& in, const std::string& session_id, v1::TargetStats* out);

v1::BranchSource ToProto(collectors::BranchSource s);
v1::Metric ToProto(pipeline::PathMetric m);
pipeline::PathMetric FromProto(v1::Metric m);
pipeline::SourceChoice FromProto(v1::BranchSource s);
pipeline::PathKind FromProto(v1::PathKind k);

}  // namespace pathprof::daemon
