// What a ProfileStore (one process) or a Session (all its processes) reports. Plain structs that
// map one to one onto the pathprof.v1 result messages; every Location is already symbolized.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/pipeline/location.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::pipeline {

struct Estimate {
  double value = 0;        // the estimated metric (exact for exact sources)
  double error_bound = 0;  // half-width of the confidence interval; 0 when exact
  double confidence = 0;   // e.g. 0.95; 0 when exact
  double share = 0;        // value / profile total, 0..1
};

// ---------------------------------------------------------------- hot paths (path engine)

// Which calling context's hot paths to report (docs/profiles.md, "Hot paths per calling
// context"): a PCCT node (CctNode::context_id), or the function names of its innermost frames.
struct ContextSelector {
  uint32_t pid = 0;   // 0: every process of the session (node ids are per process)
  uint64_t node = 0;  // CctNode::context_id; 0: select by `functions`
  // Root side first: every context whose innermost frames are these functions, e.g.
  // {"caller_a", "loop"}; several matches are summed.
  std::vector<std::string> functions;
};

struct HotPathsQuery {
  uint32_t top_k = 20;
  PathMetric metric = PathMetric::kCount;
  bool with_blocks = true;  // symbolize every block of each path
  // Set: the hot paths of branch windows attributed to this calling context only.
  std::optional<ContextSelector> context;
  // > 0: each path lists at most this many of the calling contexts it was seen in, heaviest first.
  uint32_t contexts_per_path = 0;
};

// One calling context a path was seen in, and the path's weight there.
struct PathContext {
  uint64_t node = 0;                // CctNode::context_id; 0 when the PCCT evicted the node
  std::vector<Location> functions;  // root side first
  bool truncated = false;           // the stack was cut on the root side: a partial context
  Estimate estimate;                // share: of the path's weight over its attributed windows
  uint64_t observations = 0;        // whole traversals seen in this context's windows
};

struct HotPath {
  uint32_t pid = 0;
  std::string comm;  // the process's name (a session may profile several)
  Location start;
  uint32_t length = 0;    // branches
  uint64_t outcomes = 0;  // bit i: branch i taken (or unconditional)
  Estimate estimate;
  PathMetric metric = PathMetric::kCount;
  std::vector<Location> blocks;       // first to last; empty unless with_blocks
  uint64_t observations = 0;          // whole traversals seen (windowed sources) or HPT value
  std::vector<PathContext> contexts;  // with contexts_per_path, heaviest first
};

// How a profile's path values were obtained.
enum class PathEstimator : uint8_t {
  kNone,          // nothing recorded yet
  kWindows,       // the window estimator: ptrace/LBR windows, scaled, with error bounds
  kHotPathTable,  // the Hot Path Table: exact counts (PT, exact traces)
};
// "window-estimator", "hot-path-table" ("" for kNone): the names run and analyze print.
inline constexpr EnumWords<PathEstimator, 3> kPathEstimatorWords{{
    {PathEstimator::kNone, ""},
    {PathEstimator::kWindows, "window-estimator"},
    {PathEstimator::kHotPathTable, "hot-path-table"},
}};
std::string_view PathEstimatorName(PathEstimator e);

struct HotPathsResult {
  std::vector<HotPath> paths;  // largest estimate first
  double total = 0;            // the profile's total metric
  uint64_t paths_distinct = 0;
  int64_t as_of_unix_ms = 0;
  PathEstimator estimator = PathEstimator::kNone;
  // With a context selector: the contexts it matched and their windows (0 and 0: none matched).
  uint64_t contexts_matched = 0;
  uint64_t context_windows = 0;
};

// A stable identity of a path for baselines / residual paths.
struct PathKey {
  uint32_t pid = 0;
  uint64_t start = 0;
  uint32_t length = 0;
  uint64_t outcomes = 0;
  auto operator<=>(const PathKey&) const = default;
};

struct ResidualPathsResult {
  std::vector<HotPath> residual;  // seen now, never in the baseline; largest first
  uint64_t known = 0;             // paths seen now that the baseline has
};

// ---------------------------------------------------------------- hot subpaths (OSP)

struct HotSubpathsQuery {
  uint32_t top_k = 20;
  double threshold = 0;  // > 0: every subpath whose share reaches this (iceberg) instead of top_k
};

struct Subpath {
  uint32_t pid = 0;
  std::string comm;              // the process's name (a session may profile several)
  std::vector<Location> blocks;  // canonical rotation, first block first
  uint32_t length = 0;           // blocks
  Estimate estimate;             // estimated occurrences, Chernoff error bound
};

struct HotSubpathsResult {
  std::vector<Subpath> subpaths;
  double sampling_frequency = 0;  // OSP's current f (largest over targets)
  // The shares' basis: the reservoir's metric summed over the reported subpaths (a session's:
  // over every process's, so that one share table sums to at most 1 across processes).
  double share_basis = 0;
};

// ---------------------------------------------------------------- calling context tree (PCCT)

struct CctQuery {
  uint32_t max_depth = 64;
  double min_weight = 0;      // omit subtrees lighter than this share (0..1)
  std::string root_function;  // re-root at every node of this function (empty: real roots)
  uint32_t max_nodes = 10000;
};

struct CctNode {
  uint64_t id = 0;         // unique within one result
  uint64_t parent_id = 0;  // 0 for roots
  uint32_t pid = 0;
  Location function;
  Location call_site;  // in the parent; empty (address 0) for roots
  double self_weight = 0;
  double total_weight = 0;
  double edge_weight = 0;
  bool truncated = false;  // under the "[truncated]" root (partial context)
  // The PCCT's own id of the node: stable while the node lives (unlike `id`), the selector of
  // HotPathsQuery::context.
  uint64_t context_id = 0;
  uint64_t windows = 0;  // branch windows attributed to this context or one below it
};

struct CallingContextTree {
  std::vector<CctNode> nodes;  // parents before children
  double total_weight = 0;
  uint64_t samples = 0;
};

// ---------------------------------------------------------------- HPS profile types

struct CallPair {
  uint32_t pid = 0;
  std::string comm;  // the process's name (a session may profile several)
  Location call_site;
  Location target;
  Estimate estimate;
};

struct HotCallPairsResult {
  std::vector<CallPair> pairs;
  double total = 0;  // the shares' basis: every call counted (a session's: every process's)
};

struct HotMethod {
  uint32_t pid = 0;
  std::string comm;  // the process's name (a session may profile several)
  Location function;
  Estimate self;     // from stack samples: leaf weight
  Estimate entries;  // from branch windows: function entries
};

struct HotMethodsResult {
  std::vector<HotMethod> methods;
  // The shares' bases: every stack sample's leaf weight and every entry counted (a session's:
  // every process's, as its tree's shares are).
  double self_total = 0;
  double entries_total = 0;
  std::string hot_data_streams_unsupported;  // why hot data streams are not offered
};

// ---------------------------------------------------------------- accounting

struct TargetInfo {
  uint32_t pid = 0;
  std::string comm;
  std::string executable;
  // Its cgroup v2 path when its memory map was first read (and after each exec); a process
  // moved to another cgroup later keeps the first.
  std::string cgroup;
  bool exited = false;
  int64_t exited_unix_ms = 0;
  uint64_t execs = 0;  // exec()s seen: each brings new images
  // The pid in the process's own pid namespace (a container) when it differs from `pid`, else 0.
  uint32_t namespace_pid = 0;
};

struct TargetStats {
  uint32_t pid = 0;
  uint64_t stack_samples = 0;  // delivered into the PCCT
  uint64_t windows = 0;        // branch windows fed to the path engine
  uint64_t branches = 0;
  std::map<std::string, uint64_t> drops;  // reason -> count: back-pressure, broken windows, ...
  std::map<std::string, uint64_t> decode_errors;
  double pipeline_cpu_seconds = 0;  // CPU the pipeline's threads spent on this target
  uint64_t memory_bytes = 0;        // approximate heap held by this target's profiles
  std::string window_weighting;     // how branch windows are weighted, and why (empty: no windows)
  uint64_t windows_with_context = 0;  // windows attributed to a calling context (the rest: drops)
  uint32_t namespace_pid = 0;         // as TargetInfo::namespace_pid
  // The newest windows kept for branch-profile exports (SessionConfig::export_branch_events),
  // and the older ones let go to keep that bound: retention, not a loss (each reached the
  // profile first), so not among `drops`.
  uint64_t export_windows_kept = 0;
  uint64_t export_windows_let_go = 0;
  // Windows the branch source chose not to take, by reason ("stopped_time_cap": the burst's time
  // came when the target's stopped-time budget for the last second was spent): the rate's
  // bound, not a loss, so not among `drops`.
  std::map<std::string, uint64_t> windows_held_back;
  // The windows taken, by the source they came from, where the session's source has several
  // (hybrid: "snapshot", "stopped"); window_weighting then ends with why this process's come
  // from where they do.
  std::map<std::string, uint64_t> windows_by_source;
};

}  // namespace pathprof::pipeline
