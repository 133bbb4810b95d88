#include "pathprof/profiles/ball_larus.h"

#include <algorithm>

namespace pathprof::profiles {

Result<BallLarus> BallLarus::Build(const Cfg& cfg) {
  PATHPROF_ASSIGN_OR_RETURN(PathDag dag, PathDag::Build(cfg));
  return Build(std::move(dag));
}

Result<BallLarus> BallLarus::Build(PathDag dag) {
  BallLarus bl;
  bl.num_paths_from_.assign(dag.num_nodes(), 0);
  bl.value_.assign(dag.edges().size(), 0);
  // Figure 3.1: in reverse topological order, an edge's value is the number of paths through
  // the node's earlier successors.
  const auto& topo = dag.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId v = *it;
    if (v == dag.exit()) {
      bl.num_paths_from_[v] = 1;
      continue;
    }
    uint64_t n = 0;
    for (EdgeId e : dag.out_edges(v)) {
      bl.value_[e] = n;
      if (__builtin_add_overflow(n, bl.num_paths_from_[dag.edge(e).to], &n)) {
        return Error(ErrorCode::kResourceExhausted,
                     "ball-larus: block '" + dag.node_name(v) + "' of the function entered at '" +
                         dag.node_name(dag.start()) +
                         "' starts 2^64 or more acyclic paths; ids do not fit 64 bits (split "
                         "the function or profile it with bounded-length paths instead)");
      }
    }
    bl.num_paths_from_[v] = n;
  }
  bl.dag_ = std::move(dag);
  return bl;
}

Result<uint64_t> BallLarus::IdOf(std::span<const EdgeId> path) const {
  NodeId at = dag_.start();
  uint64_t id = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] >= dag_.edges().size() || dag_.edge(path[i]).from != at) {
      return Error(ErrorCode::kInvalidArgument,
                   "ball-larus: edge #" + std::to_string(i) + " of the path does not leave '" +
                       dag_.node_name(at) + "'; a path is a chain of DAG edges from the start");
    }
    id += value_[path[i]];
    at = dag_.edge(path[i]).to;
  }
  if (at != dag_.exit()) {
    return Error(ErrorCode::kInvalidArgument, "ball-larus: the path stops at '" +
                                                  dag_.node_name(at) + "' before the exit '" +
                                                  dag_.node_name(dag_.exit()) + "'");
  }
  return id;
}

Result<DagPath> BallLarus::PathOf(uint64_t id) const {
  if (id >= num_paths()) {
    return Error(ErrorCode::kInvalidArgument, "ball-larus: path id " + std::to_string(id) +
                                                  " is out of range; the function has " +
                                                  std::to_string(num_paths()) + " paths");
  }
  // At each node the out edges partition [0, N_v) into consecutive ranges
  // [W(e), W(e) + N_dest(e)) in edge order: follow the range that holds the remaining id.
  DagPath path;
  NodeId at = dag_.start();
  uint64_t rest = id;
  while (at != dag_.exit()) {
    const auto& out = dag_.out_edges(at);
    auto it = std::upper_bound(out.begin(), out.end(), rest,
                               [this](uint64_t r, EdgeId e) { return r < value_[e]; });
    const EdgeId e = *(it - 1);  // out[0] has value 0 <= rest, so `it` is past the first edge
    rest -= value_[e];
    path.push_back(e);
    at = dag_.edge(e).to;
  }
  return path;
}

Result<DagPath> BallLarus::PathFromBlocks(std::span<const NodeId> blocks) const {
  const Cfg& cfg = dag_.cfg();
  if (blocks.empty() || blocks.front() != cfg.entry()) {
    return Error(ErrorCode::kInvalidArgument,
                 "ball-larus: a path given by blocks must start at the entry '" +
                     cfg.node(cfg.entry()).name + "'");
  }
  DagPath path;
  if (dag_.start() != cfg.entry()) path.push_back(dag_.out_edges(dag_.start()).front());
  for (size_t i = 0; i + 1 < blocks.size(); ++i) {
    const int64_t e = cfg.FindEdge(blocks[i], blocks[i + 1]);
    if (e < 0 || dag_.is_back_edge(static_cast<EdgeId>(e))) {
      return Error(ErrorCode::kInvalidArgument,
                   "ball-larus: no forward CFG edge from block #" + std::to_string(i) +
                       " to block #" + std::to_string(i + 1) +
                       " (back edges end a path; use IdsOfWalk for walks through loops)");
    }
    path.push_back(dag_.dag_edge_of(static_cast<EdgeId>(e)));
  }
  const NodeId last = blocks.back();
  if (last != dag_.exit()) {
    if (last >= cfg.num_nodes() || !cfg.out_edges(last).empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "ball-larus: a path given by blocks must end at a block without successors");
    }
    for (EdgeId e : dag_.out_edges(last)) {
      if (dag_.edge(e).kind == DagEdgeKind::kVirtualExit) path.push_back(e);
    }
  }
  return path;
}

Result<DagPath> BallLarus::PathFromNames(std::string_view names) const {
  const Cfg& cfg = dag_.cfg();
  std::vector<NodeId> blocks;
  const bool spaced = names.find(' ') != std::string_view::npos;
  size_t pos = 0;
  while (pos < names.size()) {
    size_t end = spaced ? names.find(' ', pos) : pos + 1;
    if (end == std::string_view::npos) end = names.size();
    std::string_view name = names.substr(pos, end - pos);
    pos = end + (spaced ? 1 : 0);
    if (name.empty()) continue;
    const NodeId v = cfg.FindNode(name);
    if (v == kNoNode) {
      return Error(ErrorCode::kInvalidArgument, "ball-larus: no block named '" + std::string(name) +
                                                    "' in path '" + std::string(names) + "'");
    }
    blocks.push_back(v);
  }
  return PathFromBlocks(blocks);
}

Result<std::vector<uint64_t>> BallLarus::IdsOfWalk(std::span<const NodeId> blocks) const {
  const Cfg& cfg = dag_.cfg();
  if (blocks.empty() || blocks.front() != cfg.entry()) {
    return Error(ErrorCode::kInvalidArgument,
                 "ball-larus: a walk must start at the entry '" + cfg.node(cfg.entry()).name + "'");
  }
  std::vector<uint64_t> ids;
  // The counter as instrumented code keeps it: reset at the start, incremented on each edge,
  // read out (and restarted from the loop-entry value) at each back edge.
  uint64_t r = dag_.start() != cfg.entry() ? value_[dag_.out_edges(dag_.start()).front()] : 0;
  for (size_t i = 0; i + 1 < blocks.size(); ++i) {
    const int64_t found = cfg.FindEdge(blocks[i], blocks[i + 1]);
    if (found < 0) {
      return Error(ErrorCode::kInvalidArgument,
                   "ball-larus: walk step #" + std::to_string(i) + " follows no CFG edge");
    }
    const EdgeId e = static_cast<EdgeId>(found);
    if (dag_.is_back_edge(e)) {
      ids.push_back(r + value_[dag_.loop_exit_edge(e)]);
      r = value_[dag_.loop_entry_edge(e)];
    } else {
      r += value_[dag_.dag_edge_of(e)];
    }
  }
  const NodeId last = blocks.back();
  if (last >= cfg.num_nodes() || !cfg.out_edges(last).empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "ball-larus: a walk must end at a block without successors (a return)");
  }
  if (last != dag_.exit()) {
    for (EdgeId e : dag_.out_edges(last)) r += value_[e];  // its single virtual-exit edge
  }
  ids.push_back(r);
  return ids;
}

std::string BallLarus::Describe(std::span<const EdgeId> path, std::string_view separator) const {
  std::string out;
  auto append = [&](NodeId v) {
    if (v >= dag_.cfg().num_nodes()) return;  // virtual start / exit
    if (!out.empty()) out += separator;
    out += dag_.node_name(v);
  };
  if (path.empty()) {
    append(dag_.start());
    return out;
  }
  // A loop-entry dummy starts the path at the loop header, a loop-exit dummy ends it at the
  // back edge's source: neither shows the start / exit it is attached to.
  if (dag_.edge(path.front()).kind != DagEdgeKind::kLoopEntry) append(dag_.edge(path.front()).from);
  for (EdgeId e : path) {
    if (dag_.edge(e).kind != DagEdgeKind::kLoopExit) append(dag_.edge(e).to);
  }
  return out;
}

}  // namespace pathprof::profiles
