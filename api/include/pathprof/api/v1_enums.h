// Each C++ enumeration and its pathprof.v1 twin, one table per concept, and the words of v1
// values: a v1 value's word is its C++ value's, from that value's own word table
// (stepping::kStepModeWords, collectors::kBranchSourceWords, pipeline::kPathKindWords, ...), so a
// client holding v1 values (pathctl start, pathtop) says and reads the words the rest does.
// convert.h's enum ToProto/FromProto read these tables; tests/api/v1_enums_test.cc checks that
// every value of either side has its row.
#pragma once

#include <optional>
#include <string_view>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/enum_words.h"
#include "pathprof/hwmodel/hot_path_table.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/pipeline/offline_sim.h"
#include "pathprof/pipeline/results.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/session_config.h"
#include "pathprof/stepping/step_mode.h"
#include "pathprof/v1/profiler.pb.h"
#include "pathprof/v1/sim.pb.h"

namespace pathprof::api {

// STEP_MODE_UNSPECIFIED has no row: not set, it means the server's default (SessionBounds).
inline constexpr EnumPairs<stepping::StepRequest, v1::StepMode, 5> kV1StepModes{{
    {stepping::StepMode::kSingleStep, v1::STEP_MODE_SINGLE_STEP},
    {stepping::StepMode::kBreakpoints, v1::STEP_MODE_BREAKPOINTS},
    {stepping::StepMode::kInt3, v1::STEP_MODE_INT3},
    {stepping::StepMode::kEmulate, v1::STEP_MODE_EMULATE},
    {std::nullopt, v1::STEP_MODE_AUTO},
}};

inline constexpr EnumPairs<collectors::BranchSource, v1::BranchSource, 6> kV1BranchSources{{
    {collectors::BranchSource::kNone, v1::BRANCH_SOURCE_NONE},
    {collectors::BranchSource::kPtraceBursts, v1::BRANCH_SOURCE_PTRACE},
    {collectors::BranchSource::kLbr, v1::BRANCH_SOURCE_LBR},
    {collectors::BranchSource::kIntelPt, v1::BRANCH_SOURCE_INTEL_PT},
    {collectors::BranchSource::kSnapshot, v1::BRANCH_SOURCE_SNAPSHOT},
    {collectors::BranchSource::kHybrid, v1::BRANCH_SOURCE_HYBRID},
}};

// SOURCE_CHOICE_UNSPECIFIED has no row: not set, it is taken as AUTO.
inline constexpr EnumPairs<pipeline::SourceChoice, v1::SourceChoice, 7> kV1SourceChoices{{
    {pipeline::SourceChoice::kAuto, v1::SOURCE_CHOICE_AUTO},
    {pipeline::SourceChoice::kNone, v1::SOURCE_CHOICE_NONE},
    {pipeline::SourceChoice::kPtrace, v1::SOURCE_CHOICE_PTRACE},
    {pipeline::SourceChoice::kLbr, v1::SOURCE_CHOICE_LBR},
    {pipeline::SourceChoice::kIntelPt, v1::SOURCE_CHOICE_INTEL_PT},
    {pipeline::SourceChoice::kSnapshot, v1::SOURCE_CHOICE_SNAPSHOT},
    {pipeline::SourceChoice::kHybrid, v1::SOURCE_CHOICE_HYBRID},
}};

// CALL_GRAPH_UNSPECIFIED has no row: not set, it is DWARF.
inline constexpr EnumPairs<pipeline::CallGraph, v1::CallGraph, 2> kV1CallGraphs{{
    {pipeline::CallGraph::kDwarf, v1::CALL_GRAPH_DWARF},
    {pipeline::CallGraph::kFramePointers, v1::CALL_GRAPH_FRAME_POINTERS},
}};

// PATH_KIND_UNSPECIFIED has no row: not set, it is BALL_LARUS.
inline constexpr EnumPairs<pipeline::PathKind, v1::PathKind, 4> kV1PathKinds{{
    {pipeline::PathKind::kBallLarus, v1::PATH_KIND_BALL_LARUS},
    {pipeline::PathKind::kWpp, v1::PATH_KIND_WPP},
    {pipeline::PathKind::kExtendedLoops, v1::PATH_KIND_EXTENDED_LOOPS},
    {pipeline::PathKind::kExtendedCalls, v1::PATH_KIND_EXTENDED_CALLS},
}};

// METRIC_UNSPECIFIED has no row: not set, it is COUNT. (pipeline::PathMetric is hwmodel::Metric.)
inline constexpr EnumPairs<hwmodel::Metric, v1::Metric, 4> kV1Metrics{{
    {hwmodel::Metric::kCount, v1::METRIC_COUNT},
    {hwmodel::Metric::kInstructions, v1::METRIC_INSTRUCTIONS},
    {hwmodel::Metric::kCycles, v1::METRIC_CYCLES},
    {hwmodel::Metric::kMispredictions, v1::METRIC_MISPREDICTIONS},
}};

inline constexpr EnumPairs<hwmodel::HptIndex, v1::HptIndex, 2> kV1HptIndexes{{
    {hwmodel::HptIndex::kXor, v1::HPT_INDEX_XOR},
    {hwmodel::HptIndex::kStart, v1::HPT_INDEX_START},
}};

inline constexpr EnumPairs<hwmodel::HptReplacement, v1::HptReplacement, 2> kV1HptReplacements{{
    {hwmodel::HptReplacement::kLfu, v1::HPT_REPLACEMENT_LFU},
    {hwmodel::HptReplacement::kLru, v1::HPT_REPLACEMENT_LRU},
}};

inline constexpr EnumPairs<pipeline::SimMode, v1::SimMode, 3> kV1SimModes{{
    {pipeline::SimMode::kFull, v1::SIM_MODE_FULL},
    {pipeline::SimMode::kBursty, v1::SIM_MODE_BURSTY},
    {pipeline::SimMode::kWindow, v1::SIM_MODE_WINDOW},
}};

// PATH_ESTIMATOR_UNSPECIFIED is a value here: nothing recorded yet.
inline constexpr EnumPairs<pipeline::PathEstimator, v1::PathEstimator, 3> kV1PathEstimators{{
    {pipeline::PathEstimator::kNone, v1::PATH_ESTIMATOR_UNSPECIFIED},
    {pipeline::PathEstimator::kWindows, v1::PATH_ESTIMATOR_WINDOWS},
    {pipeline::PathEstimator::kHotPathTable, v1::PATH_ESTIMATOR_HOT_PATH_TABLE},
}};

inline constexpr EnumPairs<pipeline::SessionState, v1::SessionState, 4> kV1SessionStates{{
    {pipeline::SessionState::kRunning, v1::SESSION_STATE_RUNNING},
    {pipeline::SessionState::kStopped, v1::SESSION_STATE_STOPPED},
    {pipeline::SessionState::kTargetExited, v1::SESSION_STATE_TARGET_EXITED},
    {pipeline::SessionState::kFailed, v1::SESSION_STATE_FAILED},
}};

// ---- words of v1 values (a false Parse* leaves `out` alone)

// "auto" is STEP_MODE_AUTO: the step probe's choice, whatever the daemon's default.
bool ParseStepModeWord(std::string_view word, v1::StepMode* out);
// The word of a step mode; `unset` for STEP_MODE_UNSPECIFIED or a value this build does not know.
std::string_view StepModeWord(v1::StepMode m, std::string_view unset);

bool ParseSourceChoiceWord(std::string_view word, v1::SourceChoice* out);
// The word of the source a session uses; "auto" where none is set (as before any is chosen).
std::string_view BranchSourceWord(v1::BranchSource s);
// The choice that asks for exactly the source `used` (AUTO for one not set).
v1::SourceChoice SourceChoiceFor(v1::BranchSource used);

bool ParseCallGraphWord(std::string_view word, v1::CallGraph* out);
bool ParsePathKindWord(std::string_view word, v1::PathKind* out);
bool ParseMetricWord(std::string_view word, v1::Metric* out);
// "running", "stopped", "target-exited", "failed"; "unknown" for a value not set or not known.
std::string_view SessionStateWord(v1::SessionState s);

// The number of the value of the v1 enum named `enum_full_name` ("pathprof.v1.PathKind") whose
// word is `word`, by the Parse*Word above: for a client that sets request fields by their names
// (pathctl's declared flags). nullopt for a word the enum does not have, or an enum with no words.
std::optional<int> V1EnumValueOfWord(std::string_view enum_full_name, std::string_view word);

}  // namespace pathprof::api
