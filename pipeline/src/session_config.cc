#include "pathprof/pipeline/session_config.h"

#include <algorithm>

#include <array>
#include <utility>

#include "pathprof/core/branch.h"

namespace pathprof::pipeline {
namespace {

template <typename E, size_t N>
bool ParseName(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view name,
               E* out) {
  for (const auto& [value, text] : names) {
    if (text == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, text] : names)
    if (v == value) return text;
  return "?";
}

constexpr std::array<std::pair<SourceChoice, std::string_view>, 5> kSources{{
    {SourceChoice::kAuto, "auto"},
    {SourceChoice::kNone, "none"},
    {SourceChoice::kPtrace, "ptrace"},
    {SourceChoice::kLbr, "lbr"},
    {SourceChoice::kIntelPt, "pt"},
}};
constexpr std::array<std::pair<StepChoice, std::string_view>, 5> kStepChoices{{
    {StepChoice::kAuto, "auto"},
    {StepChoice::kStep, "step"},
    {StepChoice::kBreakpoints, "breakpoints"},
    {StepChoice::kInt3, "int3"},
    {StepChoice::kEmulate, "emulate"},
}};
constexpr std::array<std::pair<PathKind, std::string_view>, 4> kKinds{{
    {PathKind::kBallLarus, "ball-larus"},
    {PathKind::kWpp, "wpp"},
    {PathKind::kExtendedLoops, "extended-loops"},
    {PathKind::kExtendedCalls, "extended-calls"},
}};
constexpr std::array<std::pair<PathMetric, std::string_view>, 4> kMetrics{{
    {PathMetric::kCount, "count"},
    {PathMetric::kInstructions, "instructions"},
    {PathMetric::kCycles, "cycles"},
    {PathMetric::kMispredictions, "mispredictions"},
}};

bool IsPowerOfTwo(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

std::string_view SourceChoiceName(SourceChoice s) {
  return NameOf(kSources, s);
}
bool ParseSourceChoice(std::string_view name, SourceChoice* out) {
  return ParseName(kSources, name, out);
}
std::string_view StepChoiceName(StepChoice s) {
  return NameOf(kStepChoices, s);
}
bool ParseStepChoice(std::string_view name, StepChoice* out) {
  return ParseName(kStepChoices, name, out);
}
std::string_view PathKindName(PathKind k) {
  return NameOf(kKinds, k);
}
bool ParsePathKind(std::string_view name, PathKind* out) {
  return ParseName(kKinds, name, out);
}
std::string_view PathMetricName(PathMetric m) {
  return NameOf(kMetrics, m);
}
bool ParsePathMetric(std::string_view name, PathMetric* out) {
  return ParseName(kMetrics, name, out);
}

Status SessionConfig::Validate() const {
  auto bad = [](std::string msg) { return Status(ErrorCode::kInvalidArgument, std::move(msg)); };
  if (pids.empty()) return bad("session config: no target pid; give at least one process id");
  for (uint32_t pid : pids)
    if (pid == 0) return bad("session config: pid 0 is not a process");
  if (engine.max_path_length < 1 || engine.max_path_length > 64)
    return bad("engine.max_path_length must be 1..64, got " +
               std::to_string(engine.max_path_length));
  if (engine.hpt_ways == 0 || engine.hpt_entries % engine.hpt_ways != 0 ||
      !IsPowerOfTwo(engine.hpt_entries / engine.hpt_ways))
    return bad("engine: hpt_entries / hpt_ways must be a power of two (got " +
               std::to_string(engine.hpt_entries) + " / " + std::to_string(engine.hpt_ways) + ")");
  if ((engine.path_kind == PathKind::kExtendedLoops ||
       engine.path_kind == PathKind::kExtendedCalls) &&
      (engine.extension < 1 || engine.extension > 255))
    return bad("engine.extension must be 1..255 for extended path kinds");
  if (sampling.stack_hz > 10000)
    return bad("sampling.stack_hz must be at most 10000, got " + std::to_string(sampling.stack_hz));
  if (sampling.window_branches < 1 || sampling.window_branches > 4096)
    return bad("sampling.window_branches must be 1..4096");
  if (!(sampling.bursts_per_second >= 0) || sampling.bursts_per_second > 10000)
    return bad("sampling.bursts_per_second must be in [0, 10000] (0: the step mode's rate)");
  if (osp.memory_entries < 16) return bad("osp.memory_entries must be at least 16");
  if (osp.max_length < 2 || !IsPowerOfTwo(osp.max_length) || osp.max_length > 65536)
    return bad("osp.max_length must be a power of two in 2..65536");
  if (!(osp.confidence > 0 && osp.confidence < 1)) return bad("osp.confidence must be in (0, 1)");
  if (pcct.max_depth < 1 || pcct.max_depth > 4096) return bad("pcct.max_depth must be 1..4096");
  if (queues.stack_queue < 1 || queues.window_queue < 1)
    return bad("queue capacities must be at least 1");
  return Status::Ok();
}

uint64_t SessionConfig::MemoryBoundBytes() const {
  // Rough per-entry sizes of each bounded structure, including map/node overheads.
  const uint64_t per_process = uint64_t{engine.hpt_entries} * 64 +
                               uint64_t{osp.memory_entries} * 96 + uint64_t{pcct.max_nodes} * 128 +
                               uint64_t{queues.window_queue} * sampling.window_branches * 48 +
                               uint64_t{kLeafAddressEntries} * 48 +  // leaf addresses (pprof)
                               uint64_t{export_branch_events} * sizeof(BranchEvent) +
                               (1u << 20);  // mappings, symbol caches, accounting
  // One stack queue per session; a queued sample holds its stack copy until it is unwound.
  const uint64_t stack_entry = 1200 + (sampling.call_graph == CallGraph::kDwarf ? 16384 : 0);
  const uint64_t processes =
      std::max<uint64_t>(1, pids.size()) + (follow_children ? max_descendants : 0);
  return per_process * processes + uint64_t{queues.stack_queue} * stack_entry;
}

std::string_view CallGraphName(CallGraph c) {
  return c == CallGraph::kFramePointers ? "fp" : "dwarf";
}

bool ParseCallGraph(std::string_view name, CallGraph* out) {
  if (name == "dwarf") {
    *out = CallGraph::kDwarf;
  } else if (name == "fp") {
    *out = CallGraph::kFramePointers;
  } else {
    return false;
  }
  return true;
}

}  // namespace pathprof::pipeline
