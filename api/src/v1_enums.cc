// convert.h's enum conversions and v1_enums.h's words: every one a lookup in the tables of
// v1_enums.h and the C++ enums' word tables, nothing else.
#include "pathprof/api/v1_enums.h"

#include "pathprof/api/convert.h"

namespace pathprof::api {

v1::BranchSource ToProto(collectors::BranchSource s) {
  return SecondOf(kV1BranchSources, s).value_or(v1::BRANCH_SOURCE_UNSPECIFIED);
}
v1::StepMode ToProto(stepping::StepMode m) {
  return ToProto(stepping::StepRequest(m));
}
v1::StepMode ToProto(stepping::StepRequest r) {
  return SecondOf(kV1StepModes, r).value_or(v1::STEP_MODE_UNSPECIFIED);
}
v1::SourceChoice ToProto(pipeline::SourceChoice s) {
  return SecondOf(kV1SourceChoices, s).value_or(v1::SOURCE_CHOICE_UNSPECIFIED);
}
v1::CallGraph ToProto(pipeline::CallGraph c) {
  return SecondOf(kV1CallGraphs, c).value_or(v1::CALL_GRAPH_UNSPECIFIED);
}
v1::PathKind ToProto(pipeline::PathKind k) {
  return SecondOf(kV1PathKinds, k).value_or(v1::PATH_KIND_UNSPECIFIED);
}
v1::Metric ToProto(hwmodel::Metric m) {
  return SecondOf(kV1Metrics, m).value_or(v1::METRIC_UNSPECIFIED);
}
v1::SessionState ToProto(pipeline::SessionState s) {
  return SecondOf(kV1SessionStates, s).value_or(v1::SESSION_STATE_UNSPECIFIED);
}
v1::HptIndex ToProto(hwmodel::HptIndex i) {
  return SecondOf(kV1HptIndexes, i).value_or(v1::HPT_INDEX_UNSPECIFIED);
}
v1::HptReplacement ToProto(hwmodel::HptReplacement r) {
  return SecondOf(kV1HptReplacements, r).value_or(v1::HPT_REPLACEMENT_UNSPECIFIED);
}
v1::SimMode ToProto(pipeline::SimMode m) {
  return SecondOf(kV1SimModes, m).value_or(v1::SIM_MODE_UNSPECIFIED);
}
v1::PathEstimator ToProto(pipeline::PathEstimator e) {
  return SecondOf(kV1PathEstimators, e).value_or(v1::PATH_ESTIMATOR_UNSPECIFIED);
}

hwmodel::Metric FromProto(v1::Metric m) {
  return FirstOf(kV1Metrics, m).value_or(hwmodel::Metric::kCount);
}
pipeline::SourceChoice FromProto(v1::SourceChoice s) {
  return FirstOf(kV1SourceChoices, s).value_or(pipeline::SourceChoice::kAuto);
}
pipeline::PathKind FromProto(v1::PathKind k) {
  return FirstOf(kV1PathKinds, k).value_or(pipeline::PathKind::kBallLarus);
}
pipeline::CallGraph FromProto(v1::CallGraph c) {
  return FirstOf(kV1CallGraphs, c).value_or(pipeline::CallGraph::kDwarf);
}
stepping::StepRequest FromProto(v1::StepMode m, stepping::StepRequest unset) {
  return FirstOf(kV1StepModes, m).value_or(unset);
}

bool ParseStepModeWord(std::string_view word, v1::StepMode* out) {
  stepping::StepRequest request;
  if (!stepping::ParseStepRequest(word, &request)) return false;
  *out = ToProto(request);
  return true;
}

std::string_view StepModeWord(v1::StepMode m, std::string_view unset) {
  const std::optional<stepping::StepRequest> request = FirstOf(kV1StepModes, m);
  return request ? stepping::StepRequestName(*request) : unset;
}

bool ParseSourceChoiceWord(std::string_view word, v1::SourceChoice* out) {
  pipeline::SourceChoice choice;
  if (!pipeline::ParseSourceChoice(word, &choice)) return false;
  *out = ToProto(choice);
  return true;
}

std::string_view BranchSourceWord(v1::BranchSource s) {
  const std::optional<collectors::BranchSource> source = FirstOf(kV1BranchSources, s);
  return source ? collectors::BranchSourceName(*source)
                : pipeline::SourceChoiceName(pipeline::SourceChoice::kAuto);
}

v1::SourceChoice SourceChoiceFor(v1::BranchSource used) {
  const std::optional<collectors::BranchSource> source = FirstOf(kV1BranchSources, used);
  if (!source) return v1::SOURCE_CHOICE_AUTO;
  return ToProto(
      FirstOf(pipeline::kSourceChoiceSources, *source).value_or(pipeline::SourceChoice::kAuto));
}

bool ParseCallGraphWord(std::string_view word, v1::CallGraph* out) {
  pipeline::CallGraph c;
  if (!pipeline::ParseCallGraph(word, &c)) return false;
  *out = ToProto(c);
  return true;
}

bool ParsePathKindWord(std::string_view word, v1::PathKind* out) {
  pipeline::PathKind k;
  if (!pipeline::ParsePathKind(word, &k)) return false;
  *out = ToProto(k);
  return true;
}

bool ParseMetricWord(std::string_view word, v1::Metric* out) {
  hwmodel::Metric m;
  if (!hwmodel::ParseMetric(word, &m)) return false;
  *out = ToProto(m);
  return true;
}

std::string_view SessionStateWord(v1::SessionState s) {
  const std::optional<pipeline::SessionState> state = FirstOf(kV1SessionStates, s);
  return state ? pipeline::SessionStateName(*state) : "unknown";
}

namespace {

template <typename E>
std::optional<int> ValueBy(bool (*parse)(std::string_view, E*), std::string_view word) {
  E value{};
  if (!parse(word, &value)) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

std::optional<int> V1EnumValueOfWord(std::string_view enum_full_name, std::string_view word) {
  if (enum_full_name == v1::StepMode_descriptor()->full_name())
    return ValueBy(ParseStepModeWord, word);
  if (enum_full_name == v1::SourceChoice_descriptor()->full_name())
    return ValueBy(ParseSourceChoiceWord, word);
  if (enum_full_name == v1::CallGraph_descriptor()->full_name())
    return ValueBy(ParseCallGraphWord, word);
  if (enum_full_name == v1::PathKind_descriptor()->full_name())
    return ValueBy(ParsePathKindWord, word);
  if (enum_full_name == v1::Metric_descriptor()->full_name()) return ValueBy(ParseMetricWord, word);
  return std::nullopt;
}

}  // namespace pathprof::api
