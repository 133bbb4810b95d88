// One table per concept: every C++ value has one word that reads back as it, no two rows share a
// word, every pathprof.v1 value (from the generated descriptor, so a value added to the proto
// alone fails here) has its row, and C++ -> v1 -> C++ and word -> v1 -> C++ come back where
// they started. The All* lists below name every enumerator in a switch without a default:
// -Werror=switch stops the build when an enum gains a value these lists do not name.
#include "pathprof/api/v1_enums.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "pathprof/api/convert.h"
#include "pathprof/stepping/exact_tracer.h"

namespace pathprof::api {
namespace {

// ---- every C++ value, kept complete by -Wswitch

template <typename E>
std::vector<E> Checked(std::vector<E> all, bool (*named)(E)) {
  for (E e : all) EXPECT_TRUE(named(e));
  return all;
}

bool Named(stepping::StepMode m) {
  switch (m) {
    case stepping::StepMode::kSingleStep:
    case stepping::StepMode::kBreakpoints:
    case stepping::StepMode::kInt3:
    case stepping::StepMode::kEmulate:
      return true;
  }
  return false;
}
std::vector<stepping::StepMode> AllStepModes() {
  using enum stepping::StepMode;
  return Checked<stepping::StepMode>({kSingleStep, kBreakpoints, kInt3, kEmulate}, Named);
}

bool Named(stepping::ExactStepMode m) {
  switch (m) {
    case stepping::ExactStepMode::kSingleStep:
    case stepping::ExactStepMode::kBlocks:
    case stepping::ExactStepMode::kBreakpoints:
    case stepping::ExactStepMode::kInt3:
      return true;
  }
  return false;
}
std::vector<stepping::ExactStepMode> AllExactStepModes() {
  using enum stepping::ExactStepMode;
  return Checked<stepping::ExactStepMode>({kSingleStep, kBlocks, kBreakpoints, kInt3}, Named);
}

bool Named(collectors::BranchSource s) {
  switch (s) {
    case collectors::BranchSource::kNone:
    case collectors::BranchSource::kPtraceBursts:
    case collectors::BranchSource::kLbr:
    case collectors::BranchSource::kIntelPt:
    case collectors::BranchSource::kSnapshot:
    case collectors::BranchSource::kHybrid:
      return true;
  }
  return false;
}
std::vector<collectors::BranchSource> AllBranchSources() {
  using enum collectors::BranchSource;
  return Checked<collectors::BranchSource>(
      {kNone, kPtraceBursts, kLbr, kIntelPt, kSnapshot, kHybrid}, Named);
}

bool Named(pipeline::SourceChoice s) {
  switch (s) {
    case pipeline::SourceChoice::kAuto:
    case pipeline::SourceChoice::kNone:
    case pipeline::SourceChoice::kPtrace:
    case pipeline::SourceChoice::kLbr:
    case pipeline::SourceChoice::kIntelPt:
    case pipeline::SourceChoice::kSnapshot:
    case pipeline::SourceChoice::kHybrid:
      return true;
  }
  return false;
}
std::vector<pipeline::SourceChoice> AllSourceChoices() {
  using enum pipeline::SourceChoice;
  return Checked<pipeline::SourceChoice>(
      {kAuto, kNone, kPtrace, kLbr, kIntelPt, kSnapshot, kHybrid}, Named);
}

bool Named(pipeline::CallGraph c) {
  switch (c) {
    case pipeline::CallGraph::kDwarf:
    case pipeline::CallGraph::kFramePointers:
      return true;
  }
  return false;
}
std::vector<pipeline::CallGraph> AllCallGraphs() {
  using enum pipeline::CallGraph;
  return Checked<pipeline::CallGraph>({kDwarf, kFramePointers}, Named);
}

bool Named(pipeline::PathKind k) {
  switch (k) {
    case pipeline::PathKind::kBallLarus:
    case pipeline::PathKind::kWpp:
    case pipeline::PathKind::kExtendedLoops:
    case pipeline::PathKind::kExtendedCalls:
      return true;
  }
  return false;
}
std::vector<pipeline::PathKind> AllPathKinds() {
  using enum pipeline::PathKind;
  return Checked<pipeline::PathKind>({kBallLarus, kWpp, kExtendedLoops, kExtendedCalls}, Named);
}

bool Named(hwmodel::Metric m) {
  switch (m) {
    case hwmodel::Metric::kCount:
    case hwmodel::Metric::kInstructions:
    case hwmodel::Metric::kCycles:
    case hwmodel::Metric::kMispredictions:
      return true;
  }
  return false;
}
std::vector<hwmodel::Metric> AllMetrics() {
  using enum hwmodel::Metric;
  return Checked<hwmodel::Metric>({kCount, kInstructions, kCycles, kMispredictions}, Named);
}

bool Named(hwmodel::HptIndex i) {
  switch (i) {
    case hwmodel::HptIndex::kStart:
    case hwmodel::HptIndex::kXor:
      return true;
  }
  return false;
}
std::vector<hwmodel::HptIndex> AllHptIndexes() {
  using enum hwmodel::HptIndex;
  return Checked<hwmodel::HptIndex>({kStart, kXor}, Named);
}

bool Named(hwmodel::HptReplacement r) {
  switch (r) {
    case hwmodel::HptReplacement::kLfu:
    case hwmodel::HptReplacement::kLru:
      return true;
  }
  return false;
}
std::vector<hwmodel::HptReplacement> AllHptReplacements() {
  using enum hwmodel::HptReplacement;
  return Checked<hwmodel::HptReplacement>({kLfu, kLru}, Named);
}

bool Named(pipeline::SimMode m) {
  switch (m) {
    case pipeline::SimMode::kFull:
    case pipeline::SimMode::kBursty:
    case pipeline::SimMode::kWindow:
      return true;
  }
  return false;
}
std::vector<pipeline::SimMode> AllSimModes() {
  using enum pipeline::SimMode;
  return Checked<pipeline::SimMode>({kFull, kBursty, kWindow}, Named);
}

bool Named(pipeline::PathEstimator e) {
  switch (e) {
    case pipeline::PathEstimator::kNone:
    case pipeline::PathEstimator::kWindows:
    case pipeline::PathEstimator::kHotPathTable:
      return true;
  }
  return false;
}
std::vector<pipeline::PathEstimator> AllPathEstimators() {
  using enum pipeline::PathEstimator;
  return Checked<pipeline::PathEstimator>({kNone, kWindows, kHotPathTable}, Named);
}

bool Named(pipeline::SessionState s) {
  switch (s) {
    case pipeline::SessionState::kRunning:
    case pipeline::SessionState::kStopped:
    case pipeline::SessionState::kTargetExited:
    case pipeline::SessionState::kFailed:
      return true;
  }
  return false;
}
std::vector<pipeline::SessionState> AllSessionStates() {
  using enum pipeline::SessionState;
  return Checked<pipeline::SessionState>({kRunning, kStopped, kTargetExited, kFailed}, Named);
}

// ---- the checks every table gets

// Every value has exactly one row, its word reads back as it, and no two rows share a word.
template <typename E, size_t N>
void ExpectWordsRoundTrip(const EnumWords<E, N>& table, const std::vector<E>& all) {
  EXPECT_EQ(N, all.size()) << "one row per value";
  for (E value : all) {
    const std::string_view word = WordOf(table, value, "\x01 no row");
    EXPECT_NE(word, "\x01 no row") << "value " << static_cast<int>(value) << " has no word";
    EXPECT_EQ(ValueOfWord(table, word), value) << word;
  }
  std::set<std::string_view> words;
  for (const auto& row : table) EXPECT_TRUE(words.insert(row.word).second) << row.word;
}

// Every v1 value but those in `unset` (which mean "not set") has one row, every C++ value has
// one, and each goes to the other and back.
template <typename C, typename P, size_t N>
void ExpectPairsRoundTrip(const EnumPairs<C, P, N>& table,
                          const google::protobuf::EnumDescriptor* proto, const std::set<P>& unset,
                          const std::vector<C>& all) {
  for (int i = 0; i < proto->value_count(); ++i) {
    const P v = static_cast<P>(proto->value(i)->number());
    SCOPED_TRACE(proto->value(i)->name());
    const std::optional<C> c = FirstOf(table, v);
    if (unset.count(v)) {
      EXPECT_FALSE(c.has_value()) << "a value meaning 'not set' has no row";
      continue;
    }
    ASSERT_TRUE(c.has_value()) << "no row: add it to the table in api/v1_enums.h";
    EXPECT_EQ(SecondOf(table, *c), v);
  }
  for (const C& c : all) {
    const std::optional<P> v = SecondOf(table, c);
    ASSERT_TRUE(v.has_value());
    // As optional<C>: where C is itself an optional (a step request), comparing with a bare C
    // would compare the outer optional with it.
    EXPECT_EQ(FirstOf(table, *v), std::optional<C>(c));
  }
  std::set<P> protos;
  for (const auto& row : table) EXPECT_TRUE(protos.insert(row.second).second);
  EXPECT_EQ(N + unset.size(), static_cast<size_t>(proto->value_count()));
}

// ---- step modes

TEST(StepModeTables, WordsV1AndBackForEveryMode) {
  ExpectWordsRoundTrip(stepping::kStepModeWords, AllStepModes());
  std::vector<stepping::StepRequest> requests = {std::nullopt};
  for (stepping::StepMode m : AllStepModes()) requests.push_back(m);
  ExpectPairsRoundTrip(kV1StepModes, v1::StepMode_descriptor(), {v1::STEP_MODE_UNSPECIFIED},
                       requests);
  for (const stepping::StepRequest& r : requests) {
    const std::string word(stepping::StepRequestName(r));
    SCOPED_TRACE(word);
    stepping::StepRequest back = stepping::StepMode::kInt3;
    ASSERT_TRUE(stepping::ParseStepRequest(word, &back));
    EXPECT_EQ(back, r);
    v1::StepMode proto = v1::STEP_MODE_UNSPECIFIED;
    ASSERT_TRUE(ParseStepModeWord(word, &proto));
    EXPECT_EQ(proto, ToProto(r));
    EXPECT_EQ(FromProto(proto, stepping::StepMode::kInt3), r);
    EXPECT_EQ(StepModeWord(proto, "unset"), word);
  }
  EXPECT_EQ(StepModeWord(v1::STEP_MODE_UNSPECIFIED, "unset"), "unset");
  // Unset, or a value of a newer client: the server's default.
  EXPECT_EQ(FromProto(v1::STEP_MODE_UNSPECIFIED, stepping::StepMode::kInt3),
            stepping::StepMode::kInt3);
  EXPECT_EQ(FromProto(static_cast<v1::StepMode>(99), std::nullopt), std::nullopt);
}

TEST(StepModeTables, WordsAreUniqueWithAutoAndTheAliasAndReadAsBefore) {
  std::set<std::string_view> words = {stepping::kAutoStepWord};
  for (const auto& row : stepping::kStepModeWords) EXPECT_TRUE(words.insert(row.word).second);
  for (const auto& row : stepping::kStepModeAliases) EXPECT_TRUE(words.insert(row.word).second);
  stepping::StepMode m = stepping::StepMode::kEmulate;
  ASSERT_TRUE(stepping::ParseStepMode("dr", &m));
  EXPECT_EQ(m, stepping::StepMode::kBreakpoints);
  EXPECT_EQ(stepping::StepModeName(m), "breakpoints");  // an alias is never printed
  EXPECT_FALSE(stepping::ParseStepMode("auto", &m));    // auto is a request, not a mode
  stepping::StepRequest r;
  EXPECT_FALSE(stepping::ParseStepRequest("single-step", &r));
  // The list the usage messages of pathctl run, start, bursts and the daemon's config print.
  EXPECT_EQ(stepping::StepRequestWords(), "auto, emulate, breakpoints, int3 or step");
}

TEST(StepModeTables, ExactTracerModes) {
  ExpectWordsRoundTrip(stepping::kExactStepModeWords, AllExactStepModes());
  stepping::ExactStepMode m = stepping::ExactStepMode::kSingleStep;
  ASSERT_TRUE(stepping::ParseExactStepMode("dr", &m));
  EXPECT_EQ(m, stepping::ExactStepMode::kBreakpoints);
  EXPECT_FALSE(stepping::ParseExactStepMode("emulate", &m));
  EXPECT_EQ(stepping::ExactStepModeName(stepping::ExactStepMode::kBlocks), "auto");
}

// ---- branch sources

TEST(SourceTables, BranchSourcesWordsV1AndBack) {
  ExpectWordsRoundTrip(collectors::kBranchSourceWords, AllBranchSources());
  ExpectPairsRoundTrip(kV1BranchSources, v1::BranchSource_descriptor(),
                       {v1::BRANCH_SOURCE_UNSPECIFIED}, AllBranchSources());
  for (collectors::BranchSource s : AllBranchSources()) {
    EXPECT_EQ(ToProto(s), SecondOf(kV1BranchSources, s));
    EXPECT_EQ(BranchSourceWord(ToProto(s)), collectors::BranchSourceName(s));
  }
  EXPECT_EQ(BranchSourceWord(v1::BRANCH_SOURCE_UNSPECIFIED), "auto");
  EXPECT_EQ(BranchSourceWord(v1::BRANCH_SOURCE_INTEL_PT), "pt");
}

TEST(SourceTables, ChoicesWordsV1AndBack) {
  ExpectPairsRoundTrip(kV1SourceChoices, v1::SourceChoice_descriptor(),
                       {v1::SOURCE_CHOICE_UNSPECIFIED}, AllSourceChoices());
  std::set<std::string_view> words;
  for (pipeline::SourceChoice c : AllSourceChoices()) {
    const std::string word(pipeline::SourceChoiceName(c));
    SCOPED_TRACE(word);
    EXPECT_TRUE(words.insert(pipeline::SourceChoiceName(c)).second);
    pipeline::SourceChoice back = pipeline::SourceChoice::kLbr;
    ASSERT_TRUE(pipeline::ParseSourceChoice(word, &back));
    EXPECT_EQ(back, c);
    v1::SourceChoice proto = v1::SOURCE_CHOICE_UNSPECIFIED;
    ASSERT_TRUE(ParseSourceChoiceWord(word, &proto));
    EXPECT_EQ(proto, ToProto(c));
    EXPECT_EQ(FromProto(proto), c);
    // Every choice but auto is one source, spelt as that source.
    const auto source = SecondOf(pipeline::kSourceChoiceSources, c);
    EXPECT_EQ(source.has_value(), c != pipeline::SourceChoice::kAuto);
    if (source) {
      EXPECT_EQ(word, collectors::BranchSourceName(*source));
      // The choice that asks again for a source in use (pathtop re-creating a session).
      EXPECT_EQ(SourceChoiceFor(ToProto(*source)), ToProto(c));
    }
  }
  EXPECT_EQ(SourceChoiceFor(v1::BRANCH_SOURCE_UNSPECIFIED), v1::SOURCE_CHOICE_AUTO);
  EXPECT_EQ(FromProto(v1::SOURCE_CHOICE_UNSPECIFIED), pipeline::SourceChoice::kAuto);
  pipeline::SourceChoice c;
  EXPECT_FALSE(pipeline::ParseSourceChoice("intel-pt", &c));
}

// ---- session settings

TEST(SettingTables, CallGraphWordsV1AndBack) {
  ExpectWordsRoundTrip(pipeline::kCallGraphWords, AllCallGraphs());
  ExpectPairsRoundTrip(kV1CallGraphs, v1::CallGraph_descriptor(), {v1::CALL_GRAPH_UNSPECIFIED},
                       AllCallGraphs());
  for (pipeline::CallGraph c : AllCallGraphs()) {
    v1::CallGraph proto = v1::CALL_GRAPH_UNSPECIFIED;
    ASSERT_TRUE(ParseCallGraphWord(pipeline::CallGraphName(c), &proto));
    EXPECT_EQ(FromProto(proto), c);
  }
  EXPECT_EQ(FromProto(v1::CALL_GRAPH_UNSPECIFIED), pipeline::CallGraph::kDwarf);
}

TEST(SettingTables, PathKindWordsV1AndBack) {
  ExpectWordsRoundTrip(pipeline::kPathKindWords, AllPathKinds());
  ExpectPairsRoundTrip(kV1PathKinds, v1::PathKind_descriptor(), {v1::PATH_KIND_UNSPECIFIED},
                       AllPathKinds());
  for (pipeline::PathKind k : AllPathKinds()) {
    v1::PathKind proto = v1::PATH_KIND_UNSPECIFIED;
    ASSERT_TRUE(ParsePathKindWord(pipeline::PathKindName(k), &proto));
    EXPECT_EQ(FromProto(proto), k);
  }
  EXPECT_EQ(FromProto(v1::PATH_KIND_UNSPECIFIED), pipeline::PathKind::kBallLarus);
}

TEST(SettingTables, MetricWordsV1AndBack) {
  ExpectWordsRoundTrip(hwmodel::kMetricWords, AllMetrics());
  ExpectPairsRoundTrip(kV1Metrics, v1::Metric_descriptor(), {v1::METRIC_UNSPECIFIED}, AllMetrics());
  for (hwmodel::Metric m : AllMetrics()) {
    v1::Metric proto = v1::METRIC_UNSPECIFIED;
    ASSERT_TRUE(ParseMetricWord(hwmodel::MetricName(m), &proto));
    EXPECT_EQ(FromProto(proto), m);
  }
  EXPECT_EQ(FromProto(v1::METRIC_UNSPECIFIED), hwmodel::Metric::kCount);
  // The session's setting is the engine's own enum: no translation between them to go stale.
  static_assert(std::is_same_v<pipeline::PathMetric, hwmodel::Metric>);
}

TEST(SettingTables, HotPathTableWordsV1AndBack) {
  ExpectWordsRoundTrip(hwmodel::kHptIndexWords, AllHptIndexes());
  ExpectPairsRoundTrip(kV1HptIndexes, v1::HptIndex_descriptor(), {v1::HPT_INDEX_UNSPECIFIED},
                       AllHptIndexes());
  ExpectWordsRoundTrip(hwmodel::kHptReplacementWords, AllHptReplacements());
  ExpectPairsRoundTrip(kV1HptReplacements, v1::HptReplacement_descriptor(),
                       {v1::HPT_REPLACEMENT_UNSPECIFIED}, AllHptReplacements());
  hwmodel::HptIndex i = hwmodel::HptIndex::kStart;
  ASSERT_TRUE(hwmodel::ParseHptIndex("xor", &i));
  EXPECT_EQ(ToProto(i), v1::HPT_INDEX_XOR);
  hwmodel::HptReplacement r = hwmodel::HptReplacement::kLfu;
  ASSERT_TRUE(hwmodel::ParseHptReplacement("lru", &r));
  EXPECT_EQ(ToProto(r), v1::HPT_REPLACEMENT_LRU);
}

// ---- results

TEST(ResultTables, SimModeWordsV1AndBack) {
  ExpectWordsRoundTrip(pipeline::kSimModeWords, AllSimModes());
  ExpectPairsRoundTrip(kV1SimModes, v1::SimMode_descriptor(), {v1::SIM_MODE_UNSPECIFIED},
                       AllSimModes());
}

TEST(ResultTables, PathEstimatorWordsV1AndBack) {
  ExpectWordsRoundTrip(pipeline::kPathEstimatorWords, AllPathEstimators());
  ExpectPairsRoundTrip(kV1PathEstimators, v1::PathEstimator_descriptor(), {}, AllPathEstimators());
  EXPECT_EQ(pipeline::PathEstimatorName(pipeline::PathEstimator::kNone), "");
}

TEST(ResultTables, SessionStateWordsV1AndBack) {
  ExpectWordsRoundTrip(pipeline::kSessionStateWords, AllSessionStates());
  ExpectPairsRoundTrip(kV1SessionStates, v1::SessionState_descriptor(),
                       {v1::SESSION_STATE_UNSPECIFIED}, AllSessionStates());
  for (pipeline::SessionState s : AllSessionStates())
    EXPECT_EQ(SessionStateWord(ToProto(s)), pipeline::SessionStateName(s));
  EXPECT_EQ(SessionStateWord(v1::SESSION_STATE_TARGET_EXITED), "target-exited");
  EXPECT_EQ(SessionStateWord(v1::SESSION_STATE_UNSPECIFIED), "unknown");
}

}  // namespace
}  // namespace pathprof::api
