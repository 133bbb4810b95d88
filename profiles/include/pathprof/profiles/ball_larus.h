// Ball-Larus path numbering ([Vaswani 2007] §3.2, figures 3.1 and 3.3; [Ball-Larus 1996] for the
// chord placement; see docs/references.md): a function's CFG becomes a DAG by removing DFS back
// edges, every DAG edge gets a value so that the sum along each start-to-exit path is a distinct
// id in [0, N), ids map back to paths exactly, and the values can be moved onto the chords of a
// maximum spanning tree so that instrumentation only touches cold edges.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/cfg.h"

namespace pathprof::profiles {

enum class DagEdgeKind : uint8_t {
  kCfg,        // an edge of the CFG that is not a back edge
  kLoopEntry,  // start -> header of back edge `cfg_edge`: a path that begins after that back edge
  kLoopExit,   // source of back edge `cfg_edge` -> exit: a path that ends by taking it
  kVirtualEntry,  // virtual start -> CFG entry (only when the entry has incoming back edges)
  kVirtualExit,   // CFG sink -> virtual exit (only when the CFG has no single sink)
};

struct DagEdge {
  EdgeId id = 0;
  NodeId from = kNoNode;
  NodeId to = kNoNode;
  DagEdgeKind kind = DagEdgeKind::kCfg;
  EdgeId cfg_edge = 0;  // the CFG edge (kCfg) or the back edge it stands for (kLoop*)
};

// A start-to-exit path through the DAG, as the sequence of its DAG edges.
using DagPath = std::vector<EdgeId>;

// The acyclic graph the numbering works on. Nodes 0..cfg.num_nodes()-1 are the CFG's blocks;
// a virtual start and/or exit node follows them when the CFG needs one (see DagEdgeKind).
class PathDag {
 public:
  // Fails on a CFG without an entry or with blocks the entry cannot reach.
  static Result<PathDag> Build(const Cfg& cfg);

  const Cfg& cfg() const { return cfg_; }
  NodeId start() const { return start_; }
  NodeId exit() const { return exit_; }
  size_t num_nodes() const { return out_.size(); }
  const std::vector<DagEdge>& edges() const { return edges_; }
  const DagEdge& edge(EdgeId id) const { return edges_[id]; }
  const std::vector<EdgeId>& out_edges(NodeId v) const { return out_[v]; }
  // Start first, exit last.
  const std::vector<NodeId>& topological_order() const { return topo_; }
  // CFG edge ids of the DFS back edges, in discovery order.
  const std::vector<EdgeId>& back_edges() const { return back_edges_; }
  bool is_back_edge(EdgeId cfg_edge) const { return back_index_[cfg_edge] >= 0; }
  // The DAG edge standing for a CFG edge that is not a back edge.
  EdgeId dag_edge_of(EdgeId cfg_edge) const { return cfg_to_dag_[cfg_edge]; }
  // The two dummy edges standing for a back edge.
  EdgeId loop_entry_edge(EdgeId back_edge) const;
  EdgeId loop_exit_edge(EdgeId back_edge) const;
  // Block name, or "<entry>" / "<exit>" for the virtual nodes.
  std::string node_name(NodeId v) const;

 private:
  Cfg cfg_;
  NodeId start_ = kNoNode;
  NodeId exit_ = kNoNode;
  std::vector<DagEdge> edges_;
  std::vector<std::vector<EdgeId>> out_;
  std::vector<NodeId> topo_;
  std::vector<EdgeId> back_edges_;
  std::vector<int64_t> back_index_;  // per CFG edge: index into back_edges_, or -1
  std::vector<EdgeId> cfg_to_dag_;   // per CFG edge that is not a back edge
  std::vector<EdgeId> loop_entry_;   // per back edge index
  std::vector<EdgeId> loop_exit_;    // per back edge index
};

// Where to put the counter increments: values moved off the edges of a maximum spanning tree
// (weights = expected edge frequencies) onto its chords, so that the sum of increments along
// every path still equals the path's value ([Ball-Larus 1996]; the blog post's "Creating
// Instrumentation").
struct ChordIncrement {
  EdgeId dag_edge = 0;
  int64_t increment = 0;  // may be negative
};

struct ChordPlan {
  std::vector<ChordIncrement> chords;  // in DAG edge order; every other edge carries nothing
  std::vector<EdgeId> tree_edges;      // the spanning tree (without the implicit exit->start edge)
  // Increment per DAG edge (0 on tree edges), for evaluating the plan.
  std::vector<int64_t> increment_by_edge;

  // The counter value at the end of `path` under this plan. Arithmetic wraps modulo 2^64, which
  // keeps it exact: the true sum is the path's value.
  uint64_t Evaluate(std::span<const EdgeId> path) const;
};

// Computes the maximum spanning tree of the DAG (as an undirected graph, plus an exit->start
// edge that is always in the tree) for `frequency` (one per DAG edge; empty = all equal), and the
// increments on the chords for per-edge `values` (Ball-Larus values, or PPP weights cast to
// uint64). Fails when a span has the wrong size.
Result<ChordPlan> PlaceOnChords(const PathDag& dag, std::span<const uint64_t> values,
                                std::span<const uint64_t> frequency = {});

class BallLarus {
 public:
  // Figure 3.1 (computeBLIncrements). Fails when the function has 2^64 paths or more.
  static Result<BallLarus> Build(const Cfg& cfg);
  static Result<BallLarus> Build(PathDag dag);

  const PathDag& dag() const { return dag_; }
  uint64_t num_paths() const { return num_paths_from_[dag_.start()]; }
  uint64_t num_paths_from(NodeId v) const { return num_paths_from_[v]; }
  uint64_t value(EdgeId dag_edge) const { return value_[dag_edge]; }
  const std::vector<uint64_t>& values() const { return value_; }

  // Figure 3.3: the id of a start-to-exit path. Fails when `path` is not one.
  Result<uint64_t> IdOf(std::span<const EdgeId> path) const;
  // The inverse: the unique path whose id is `id` (< num_paths()).
  Result<DagPath> PathOf(uint64_t id) const;
  // A path given by its blocks, using CFG edges only (no back edge crossed): `blocks` runs from
  // the CFG entry to a sink; virtual start/exit edges are added as needed.
  Result<DagPath> PathFromBlocks(std::span<const NodeId> blocks) const;
  // Same, with blocks named ("s a c d t" or, when every name is one character, "sacdt").
  Result<DagPath> PathFromNames(std::string_view names) const;
  // An executed walk through the CFG (entry to a sink, back edges allowed) cut into its
  // Ball-Larus paths at back edges, as the instrumented program would: their ids in order.
  Result<std::vector<uint64_t>> IdsOfWalk(std::span<const NodeId> blocks) const;
  // Blocks of a path joined by `separator`, virtual nodes left out ("sacdt" with "").
  std::string Describe(std::span<const EdgeId> path, std::string_view separator = " ") const;

  Result<ChordPlan> PlanChords(std::span<const uint64_t> frequency = {}) const {
    return PlaceOnChords(dag_, value_, frequency);
  }

 private:
  PathDag dag_;
  std::vector<uint64_t> num_paths_from_;  // N_v per node
  std::vector<uint64_t> value_;           // W(e) per DAG edge
};

}  // namespace pathprof::profiles
