// Pipeline results and settings <-> pathprof.v1 messages. One function per message; no logic
// beyond field mapping and enum translation. The daemon fills its answers with these and
// pathctl's embedded commands use them too, so the two say the same thing in the same words.
#pragma once

#include "pathprof/collectors/capabilities.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/offline_analysis.h"
#include "pathprof/pipeline/offline_sim.h"
#include "pathprof/pipeline/results.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/stepping/step_probe.h"
#include "pathprof/v1/profiler.pb.h"
#include "pathprof/v1/reports.pb.h"
#include "pathprof/v1/sim.pb.h"

namespace pathprof::api {

void ToProto(const pipeline::Location& in, v1::Location* out);
void ToProto(const pipeline::Estimate& in, v1::Estimate* out);
void ToProto(const pipeline::HotPath& in, v1::HotPath* out);  // pid and observations included
// A session with an empty id (one pathctl runs itself, not a daemon resource) gets no name. Its
// settings are the config's (session_request.h); its target is the daemon's to fill in.
void ToProto(const pipeline::SessionInfo& in, v1::Session* out);
void ToProto(const pipeline::TargetStats& in, const std::string& session_id, v1::TargetStats* out);

// A query's whole answer, about the session whose bare id is `session_id` (named
// sessions/{id} in the message; an empty id names none). The compute_time of a profile with nothing
// in it yet is now.
void ToProto(const pipeline::HotPathsResult& in, const std::string& session_id, v1::HotPaths* out);
// At most `max_subpaths` rows: an iceberg query (threshold) has no top_k to bound it.
void ToProto(const pipeline::HotSubpathsResult& in, const std::string& session_id,
             size_t max_subpaths, v1::HotSubpaths* out);
void ToProto(const pipeline::CallingContextTree& in, const std::string& session_id,
             v1::CallingContextTree* out);
void ToProto(const pipeline::HotCallPairsResult& in, const std::string& session_id,
             v1::HotCallPairs* out);
void ToProto(const pipeline::HotMethodsResult& in, const std::string& session_id,
             v1::HotMethods* out);
void ToProto(const pipeline::ResidualPathsResult& in, const std::string& session_id,
             v1::ResidualPaths* out);

void ToProto(const pipeline::DecodeSummary& in, v1::DecodeSummary* out);

void ToProto(const collectors::SourceCapability& in, v1::SourceCapability* out);
void ToProto(const stepping::MechanismResult& in, v1::SourceCapability* out);
void ToProto(const stepping::StepProbeResult& in, v1::StepMechanisms* out);
// What this process found it can collect (the daemon adds its version).
void ToProto(const collectors::HostCapabilities& in, v1::Capabilities* out);

// Enums, through the tables of v1_enums.h. A value a table lacks (a v1 value of a newer
// client, say) is the field's default: UNSPECIFIED on the way out, the setting's default in.
v1::BranchSource ToProto(collectors::BranchSource s);
v1::StepMode ToProto(stepping::StepMode m);
v1::StepMode ToProto(stepping::StepRequest r);  // nullopt: STEP_MODE_AUTO
v1::SourceChoice ToProto(pipeline::SourceChoice s);
v1::CallGraph ToProto(pipeline::CallGraph c);
v1::PathKind ToProto(pipeline::PathKind k);
v1::Metric ToProto(hwmodel::Metric m);  // pipeline::PathMetric is hwmodel::Metric
v1::SessionState ToProto(pipeline::SessionState s);
// The path engine's own settings, as `pathctl sim` reports them.
v1::HptIndex ToProto(hwmodel::HptIndex i);
v1::HptReplacement ToProto(hwmodel::HptReplacement r);
v1::SimMode ToProto(pipeline::SimMode m);
v1::PathEstimator ToProto(pipeline::PathEstimator e);
hwmodel::Metric FromProto(v1::Metric m);
pipeline::SourceChoice FromProto(v1::SourceChoice s);
pipeline::PathKind FromProto(v1::PathKind k);
pipeline::CallGraph FromProto(v1::CallGraph c);
// `unset` for STEP_MODE_UNSPECIFIED (or a value this build does not know): the server's default.
stepping::StepRequest FromProto(v1::StepMode m, stepping::StepRequest unset);

}  // namespace pathprof::api
