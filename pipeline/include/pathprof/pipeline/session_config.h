// What a profiling session collects and how: the pipeline's side of
// pathprof.v1.StartSessionRequest. Zero/empty fields mean "the default" so a config copied field by
// field from the proto works.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/collectors/window_budget.h"
#include "pathprof/core/enum_words.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/pipeline/process_match.h"
#include "pathprof/pipeline/session_defaults.h"
#include "pathprof/stepping/step_mode.h"

namespace pathprof::pipeline {

// Where branch windows come from. kAuto: the best the host has (PT > LBR > ptrace bursts).
enum class SourceChoice : uint8_t { kAuto = 0, kNone, kPtrace, kLbr, kIntelPt, kSnapshot, kHybrid };
// The source each choice but kAuto asks for; its word is that source's
// (collectors::kBranchSourceWords: "none", "ptrace", "lbr", "pt", "snapshot", "hybrid"), kAuto's
// is "auto".
inline constexpr EnumPairs<SourceChoice, collectors::BranchSource, 6> kSourceChoiceSources{{
    {SourceChoice::kNone, collectors::BranchSource::kNone},
    {SourceChoice::kPtrace, collectors::BranchSource::kPtraceBursts},
    {SourceChoice::kLbr, collectors::BranchSource::kLbr},
    {SourceChoice::kIntelPt, collectors::BranchSource::kIntelPt},
    {SourceChoice::kSnapshot, collectors::BranchSource::kSnapshot},
    {SourceChoice::kHybrid, collectors::BranchSource::kHybrid},
}};
// "auto", "none", "ptrace", "lbr", "pt", "snapshot", "hybrid"
std::string_view SourceChoiceName(SourceChoice s);
bool ParseSourceChoice(std::string_view name, SourceChoice* out);

// How ptrace bursts step a window: stepping::StepRequest (a mode, or nullopt for auto: what the
// host's step probe says works best); stepping::ParseStepRequest and StepRequestName read and
// write its words.

// How user stacks are walked: the kernel's frame-pointer walk alone, or a copy of the stack's top
// unwound with DWARF CFI (perf's --call-graph dwarf), which programs without frame pointers need.
enum class CallGraph : uint8_t { kDwarf = 0, kFramePointers };
inline constexpr EnumWords<CallGraph, 2> kCallGraphWords{{
    {CallGraph::kDwarf, "dwarf"},
    {CallGraph::kFramePointers, "fp"},
}};
std::string_view CallGraphName(CallGraph c);  // "dwarf", "fp"
bool ParseCallGraph(std::string_view name, CallGraph* out);
// The command line's spelling, as perf's: "fp", "dwarf" or "dwarf,SIZE" (SIZE in bytes,
// 4096..65536). `stack_copy_bytes` is set only when SIZE is given.
bool ParseCallGraphSpec(std::string_view spec, CallGraph* out, uint32_t* stack_copy_bytes);

enum class PathKind : uint8_t {
  kBallLarus = 0,  // acyclic, intra-procedural (thesis table 5.1)
  kWpp,            // whole-program-path pieces (table 5.2)
  kExtendedLoops,  // across `extension` back-edges
  kExtendedCalls,  // across `extension` calls
};
inline constexpr EnumWords<PathKind, 4> kPathKindWords{{
    {PathKind::kBallLarus, "ball-larus"},
    {PathKind::kWpp, "wpp"},
    {PathKind::kExtendedLoops, "extended-loops"},
    {PathKind::kExtendedCalls, "extended-calls"},
}};
std::string_view PathKindName(PathKind k);  // "ball-larus", "wpp", "extended-loops", ...
bool ParsePathKind(std::string_view name, PathKind* out);

// What the Hot Path Table accumulates per path: the path engine's own enum, so that the
// session's setting reaches the engine without a translation (words: hwmodel::kMetricWords).
using PathMetric = hwmodel::Metric;

struct EngineSettings {
  PathKind path_kind = PathKind::kBallLarus;
  uint32_t extension = kSessionDefaults.extension;              // N for the extended kinds
  uint32_t max_path_length = kSessionDefaults.max_path_length;  // branches per descriptor, 1..64
  // Hot Path Table size (power of two multiple of ways)
  uint32_t hpt_entries = kSessionDefaults.hpt_entries;
  uint32_t hpt_ways = 4;
  bool hpt_index_start_only = false;  // index by start bits instead of XOR(start, len, outcomes)
  bool hpt_lru = false;               // LRU replacement instead of LFU
  PathMetric metric = PathMetric::kCount;
};

struct SamplingSettings {
  uint32_t stack_hz = kSessionDefaults.stack_hz;  // eBPF stack sampling; 0 = no stacks
  // W: taken branches per burst / LBR window
  uint32_t window_branches = kSessionDefaults.window_branches;
  double bursts_per_second = 0;  // ptrace bursts: mean rate; 0: the step mode's (ptrace_bursts.h)
  // ptrace bursts: cap on any second threads spend stopped
  double max_stopped_fraction = kSessionDefaults.max_stopped_fraction;
  stepping::StepRequest step_mode;  // ptrace bursts: how windows are stepped (nullopt: auto)
  uint64_t lbr_period = 100003;     // LBR: cycles between samples
  bool kernel_stacks = true;
  CallGraph call_graph = CallGraph::kDwarf;
  // kDwarf: user stack bytes copied with each sample (whole pages from the stack pointer's).
  uint32_t stack_copy_bytes = kSessionDefaults.stack_copy_bytes;
};

struct OspSettings {
  uint32_t memory_entries = kSessionDefaults.osp_memory_entries;  // m
  uint32_t max_length = 1024;    // longest subpath in blocks (power of two)
  double confidence = 0.95;      // for reported error bounds
  double expected_blocks = 1e7;  // n of eq. 2.13: sets the initial sampling frequency
};

struct PcctSettings {
  uint32_t max_depth = kSessionDefaults.pcct_max_depth;  // frames placed per sample (bounded walk)
  uint32_t max_nodes = 1u << 18;  // memory bound per process; evictions are counted
  uint32_t purge_interval_s = 0;  // 0: cumulative
};

// Bounds on the pipeline's own memory: queue depths (back-pressure drops beyond them).
struct QueueSettings {
  uint32_t stack_queue = 4096;   // raw stack samples waiting for symbol resolution
  uint32_t window_queue = 1024;  // branch windows waiting for the path engine
};

// Distinct sampled leaf addresses a process's store keeps (for pprof locations per line).
inline constexpr uint32_t kLeafAddressEntries = 1u << 16;

struct SessionConfig {
  std::vector<uint32_t> pids;  // every thread of each process is profiled
  SourceChoice source = SourceChoice::kAuto;
  EngineSettings engine;
  SamplingSettings sampling;
  OspSettings osp;
  PcctSettings pcct;
  QueueSettings queues;
  uint32_t duration_s = 0;     // 0: until stopped (or every target exited)
  uint32_t retention_s = 600;  // how long an exited target's profile is kept
  uint32_t owner_uid = 0;      // who started it (the daemon's authorization uses it)
  // Set for a non-admin's session: the uid whose privileges the targets may not exceed. Their
  // credentials are checked at start, at every exec and every query; stack samples are filtered
  // in the kernel by credentials; the ptrace tracer runs as this uid. Unset: no confinement.
  std::optional<uint32_t> confine_to_uid;
  // An unconfined session: the ptrace tracer of a target that is a plain user's process (its
  // uids agree, not root, no capabilities) runs as that user, not as the caller, so the code it
  // interprets can do no more than its own author could. The price: the kernel grants no
  // set-uid elevation to the target under such a tracer. Where that user may not attach (Yama's
  // ptrace_scope), the tracer runs as the caller, and the source's detail says so.
  bool tracer_as_target = false;
  // Processes the targets fork are profiled too, each in its own store (the eBPF filter adds a
  // child in the kernel at fork; branch sources stay on the targets). At most max_descendants
  // stores are made; samples of further ones are counted ("descendant_limit").
  bool follow_children = kSessionDefaults.follow_children;
  uint32_t max_descendants = kSessionDefaults.max_descendants;
  // Every process on the host (stacks only; pids empty): a process joins on its first sample,
  // with a store of its own, up to max_descendants stores. Past that a process's samples are
  // counted as process_limit until it has been refused more than the coldest store (the fewest
  // samples) ever held; that store is then evicted (its samples counted as process_evicted)
  // and the newcomer takes its place. Runs until stopped. For the daemon's continuous mode.
  bool every_process = false;
  // Snapshot windows (source snapshot; with every_process each process that joins gets them
  // too): a budget shared with other sessions (the daemon's continuous mode: one for the host).
  // Null: the session's own windows are bounded by the collector's queue alone.
  std::shared_ptr<collectors::WindowBudget> window_budget;
  // Source hybrid with every_process: the window rate of each process it stops because its
  // snapshot windows fell short (the daemon's continuous.hybrid_stop_hz). A session on named
  // pids takes the ptrace source's rate (sampling.bursts_per_second) instead.
  double hybrid_stop_hz = 20;
  // With every_process: only the processes this names join (checked on a process's first
  // sample, and again a second later for one that did not match: it may move into a unit's
  // cgroup or exec the named program). Empty: every process.
  ProcessMatch join_match;
  // Branches each process keeps, newest windows first, for `pathctl export --format
  // bolt|perf-lbr SESSION`; older windows are let go and counted as retention, not as drops
  // (TargetStats::export_windows_let_go). With every_process, also the branches all the
  // session's processes keep together (a busy one lets its oldest go first: each keeps about
  // the same span of time, at least its newest window; ProfileStore::ShareExportBuffer).
  uint32_t export_branch_events = 1u << 16;

  // Checks ranges (pids present, path length 1..64, HPT geometry, OSP length a power of two...).
  Status Validate() const;
  // The most memory the session's profiles and queues may take, from the bounds above: what
  // memory quotas count.
  uint64_t MemoryBoundBytes() const;
};

}  // namespace pathprof::pipeline
