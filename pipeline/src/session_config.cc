#include "pathprof/pipeline/session_config.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/branch.h"

namespace pathprof::pipeline {
namespace {

constexpr std::string_view kAutoSourceWord = "auto";

bool IsPowerOfTwo(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

std::string_view SourceChoiceName(SourceChoice s) {
  if (s == SourceChoice::kAuto) return kAutoSourceWord;
  const std::optional<collectors::BranchSource> source = SecondOf(kSourceChoiceSources, s);
  return source ? collectors::BranchSourceName(*source) : "?";
}
bool ParseSourceChoice(std::string_view name, SourceChoice* out) {
  if (name == kAutoSourceWord) {
    *out = SourceChoice::kAuto;
    return true;
  }
  collectors::BranchSource source;
  if (!collectors::ParseBranchSource(name, &source)) return false;
  const std::optional<SourceChoice> choice = FirstOf(kSourceChoiceSources, source);
  if (choice) *out = *choice;
  return choice.has_value();
}
std::string_view PathKindName(PathKind k) {
  return WordOf(kPathKindWords, k);
}
bool ParsePathKind(std::string_view name, PathKind* out) {
  return ParseWord(kPathKindWords, name, out);
}
std::string_view CallGraphName(CallGraph c) {
  return WordOf(kCallGraphWords, c);
}
bool ParseCallGraph(std::string_view name, CallGraph* out) {
  return ParseWord(kCallGraphWords, name, out);
}
bool ParseCallGraphSpec(std::string_view spec, CallGraph* out, uint32_t* stack_copy_bytes) {
  const size_t comma = spec.find(',');
  if (comma == std::string_view::npos) return ParseCallGraph(spec, out);
  if (spec.substr(0, comma) != "dwarf") return false;  // only the DWARF walk copies a stack
  const std::string_view size = spec.substr(comma + 1);
  uint32_t bytes = 0;
  const auto [end, err] = std::from_chars(size.data(), size.data() + size.size(), bytes);
  if (err != std::errc() || end != size.data() + size.size() ||
      bytes < collectors::kMinStackCopyBytes || bytes > collectors::kMaxStackCopyBytes)
    return false;
  *out = CallGraph::kDwarf;
  *stack_copy_bytes = bytes;
  return true;
}

Status SessionConfig::Validate() const {
  auto bad = [](std::string msg) { return Status(ErrorCode::kInvalidArgument, std::move(msg)); };
  if (every_process) {
    if (!pids.empty()) return bad("session config: every process, or a list of pids, not both");
    if (source != SourceChoice::kNone && source != SourceChoice::kSnapshot &&
        source != SourceChoice::kHybrid)
      return bad(
          "session config: every process takes stacks, and branch windows only from snapshots "
          "(source none, snapshot, or hybrid: snapshots, and stops for a few processes whose "
          "snapshot windows end too early): the other branch sources trace the processes a "
          "session names");
    if (confine_to_uid) return bad("session config: only an admin profiles every process");
    if (!(hybrid_stop_hz > 0 && hybrid_stop_hz <= 1000))
      return bad("session config: hybrid_stop_hz must be in (0, 1000] windows a second, got " +
                 std::to_string(hybrid_stop_hz));
  } else if (!join_match.empty()) {
    return bad("session config: join_match selects among every process: set every_process");
  } else if (pids.empty()) {
    return bad("session config: no target pid; give at least one process id");
  }
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
  if (sampling.stack_copy_bytes < collectors::kMinStackCopyBytes ||
      sampling.stack_copy_bytes > collectors::kMaxStackCopyBytes)
    return bad("sampling.stack_copy_bytes must be " +
               std::to_string(collectors::kMinStackCopyBytes) + ".." +
               std::to_string(collectors::kMaxStackCopyBytes) + ", got " +
               std::to_string(sampling.stack_copy_bytes));
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
  const uint64_t stack_entry =
      1200 + (sampling.call_graph == CallGraph::kDwarf ? sampling.stack_copy_bytes : 0);
  const uint64_t processes =
      std::max<uint64_t>(1, pids.size()) + (follow_children || every_process ? max_descendants : 0);
  return per_process * processes + uint64_t{queues.stack_queue} * stack_entry;
}

}  // namespace pathprof::pipeline
