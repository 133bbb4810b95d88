// DAG conversion of figure 3.1's preamble ([Vaswani 2007], see docs/references.md). The thesis
// writes the dummy edges for a back edge v -> v' as s -> v and v' -> t; Ball and Larus
// ([Ball-Larus 1996]) use s -> v' (a path may begin at the loop header) and v -> t (a path may end
// with the back edge), which is what keeps every executed acyclic path representable. We follow
// Ball and Larus.
#include <algorithm>

#include "pathprof/profiles/ball_larus.h"

namespace pathprof::profiles {

namespace {

// Iterative DFS from the entry (successors in edge order): marks reachability and returns the
// back edges (edges into a node still on the DFS stack).
std::vector<EdgeId> FindBackEdges(const Cfg& cfg, std::vector<uint8_t>& state) {
  enum : uint8_t { kUnseen = 0, kOnStack = 1, kDone = 2 };
  std::vector<EdgeId> back;
  state.assign(cfg.num_nodes(), kUnseen);
  std::vector<std::pair<NodeId, size_t>> stack;  // node, next out-edge index
  stack.emplace_back(cfg.entry(), 0);
  state[cfg.entry()] = kOnStack;
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    const auto& out = cfg.out_edges(v);
    if (next == out.size()) {
      state[v] = kDone;
      stack.pop_back();
      continue;
    }
    const EdgeId e = out[next++];
    const NodeId w = cfg.edge(e).to;
    if (state[w] == kOnStack) {
      back.push_back(e);
    } else if (state[w] == kUnseen) {
      state[w] = kOnStack;
      stack.emplace_back(w, 0);  // invalidates v/next; they are not used again this round
    }
  }
  return back;
}

}  // namespace

Result<PathDag> PathDag::Build(const Cfg& cfg) {
  if (cfg.num_nodes() == 0 || cfg.entry() == kNoNode) {
    return Error(ErrorCode::kInvalidArgument,
                 "path dag: the CFG has no entry block; call Cfg::SetEntry before numbering paths");
  }
  std::vector<uint8_t> state;
  PathDag dag;
  dag.back_edges_ = FindBackEdges(cfg, state);
  {
    std::string unreachable;
    size_t count = 0;
    for (NodeId v = 0; v < cfg.num_nodes(); ++v) {
      if (state[v] != 0) continue;
      if (++count <= 5) unreachable += (unreachable.empty() ? "" : ", ") + cfg.node(v).name;
    }
    if (count > 0) {
      return Error(ErrorCode::kInvalidArgument,
                   "path dag: " + std::to_string(count) + " block(s) unreachable from entry '" +
                       cfg.node(cfg.entry()).name + "' (" + unreachable +
                       (count > 5 ? ", ..." : "") + "); remove dead blocks or fix the CFG's edges");
    }
  }
  dag.cfg_ = cfg;
  dag.back_index_.assign(cfg.num_edges(), -1);
  for (size_t i = 0; i < dag.back_edges_.size(); ++i) dag.back_index_[dag.back_edges_[i]] = i;

  // Any edge into the entry is a back edge (the entry stays on the DFS stack throughout), and
  // its loop-entry dummy would be a self loop, so such an entry gets a virtual start node.
  bool entry_has_preds = false;
  for (EdgeId b : dag.back_edges_) entry_has_preds |= cfg.edge(b).to == cfg.entry();
  std::vector<NodeId> sinks;
  for (NodeId v = 0; v < cfg.num_nodes(); ++v) {
    if (cfg.out_edges(v).empty()) sinks.push_back(v);
  }
  NodeId next_node = static_cast<NodeId>(cfg.num_nodes());
  dag.start_ = entry_has_preds ? next_node++ : cfg.entry();
  dag.exit_ = sinks.size() == 1 ? sinks[0] : next_node++;
  dag.out_.resize(next_node);

  auto add = [&dag](NodeId from, NodeId to, DagEdgeKind kind, EdgeId cfg_edge) {
    const EdgeId id = static_cast<EdgeId>(dag.edges_.size());
    dag.edges_.push_back(DagEdge{id, from, to, kind, cfg_edge});
    dag.out_[from].push_back(id);
    return id;
  };
  dag.cfg_to_dag_.assign(cfg.num_edges(), 0);
  dag.loop_entry_.assign(dag.back_edges_.size(), 0);
  dag.loop_exit_.assign(dag.back_edges_.size(), 0);
  if (entry_has_preds) add(dag.start_, cfg.entry(), DagEdgeKind::kVirtualEntry, 0);
  // A block's successors keep their CFG order; a back edge's slot becomes its loop-exit dummy.
  for (NodeId v = 0; v < cfg.num_nodes(); ++v) {
    for (EdgeId e : cfg.out_edges(v)) {
      const int64_t b = dag.back_index_[e];
      if (b < 0) {
        dag.cfg_to_dag_[e] = add(v, cfg.edge(e).to, DagEdgeKind::kCfg, e);
      } else {
        dag.loop_exit_[b] = add(v, dag.exit_, DagEdgeKind::kLoopExit, e);
      }
    }
    if (cfg.out_edges(v).empty() && v != dag.exit_) {
      add(v, dag.exit_, DagEdgeKind::kVirtualExit, 0);
    }
  }
  for (size_t b = 0; b < dag.back_edges_.size(); ++b) {
    const EdgeId e = dag.back_edges_[b];
    dag.loop_entry_[b] = add(dag.start_, cfg.edge(e).to, DagEdgeKind::kLoopEntry, e);
  }
  // Out lists were filled node by node, so the start's dummies come last in its list.

  // Topological order (Kahn's algorithm, smallest id first among ready nodes for determinism).
  std::vector<uint32_t> indegree(dag.out_.size(), 0);
  for (const DagEdge& e : dag.edges_) ++indegree[e.to];
  std::vector<NodeId> ready;
  for (NodeId v = 0; v < dag.out_.size(); ++v) {
    if (indegree[v] == 0) ready.push_back(v);
  }
  std::vector<NodeId> stack(ready.rbegin(), ready.rend());
  while (!stack.empty()) {
    const NodeId v = stack.back();
    stack.pop_back();
    dag.topo_.push_back(v);
    for (EdgeId e : dag.out_[v]) {
      if (--indegree[dag.edges_[e].to] == 0) stack.push_back(dag.edges_[e].to);
    }
  }
  if (dag.topo_.size() != dag.out_.size() || dag.topo_.front() != dag.start_ ||
      dag.topo_.back() != dag.exit_) {
    return Error(ErrorCode::kInternal,
                 "path dag: back-edge removal did not leave a single-entry single-exit DAG");
  }
  return dag;
}

EdgeId PathDag::loop_entry_edge(EdgeId back_edge) const {
  return loop_entry_[back_index_[back_edge]];
}

EdgeId PathDag::loop_exit_edge(EdgeId back_edge) const {
  return loop_exit_[back_index_[back_edge]];
}

std::string PathDag::node_name(NodeId v) const {
  if (v < cfg_.num_nodes()) return cfg_.node(v).name;
  return v == start_ ? "<entry>" : "<exit>";
}

}  // namespace pathprof::profiles
