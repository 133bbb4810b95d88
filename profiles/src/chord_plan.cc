// Chord placement ([Ball-Larus 1996], see docs/references.md): a maximum spanning tree over
// expected edge frequencies keeps the hot edges free of instrumentation. With a potential phi(v)
// defined along the tree (phi(start) = 0, phi(to) = phi(from) + value on every tree edge, and the
// implicit exit->start edge in the tree so phi(exit) = phi(start)), the increment
// value(e) + phi(from) - phi(to) is zero on tree edges, and along any start-to-exit path the
// increments telescope to the sum of the values: this is Ball and Larus's cycle-sum increment,
// computed in one pass.
#include <algorithm>
#include <numeric>

#include "pathprof/profiles/ball_larus.h"

namespace pathprof::profiles {

namespace {

// Written here rather than taken from a library: twenty lines, and Boost is not a dependency.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  bool Union(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return false;
    parent_[a] = b;
    return true;
  }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

uint64_t ChordPlan::Evaluate(std::span<const EdgeId> path) const {
  uint64_t sum = 0;
  for (EdgeId e : path) sum += static_cast<uint64_t>(increment_by_edge[e]);
  return sum;
}

Result<ChordPlan> PlaceOnChords(const PathDag& dag, std::span<const uint64_t> values,
                                std::span<const uint64_t> frequency) {
  const size_t num_edges = dag.edges().size();
  if (values.size() != num_edges || (!frequency.empty() && frequency.size() != num_edges)) {
    return Error(ErrorCode::kInvalidArgument,
                 "chord plan: got " + std::to_string(values.size()) + " values and " +
                     std::to_string(frequency.size()) + " frequencies for a DAG of " +
                     std::to_string(num_edges) + " edges; pass one per DAG edge");
  }
  // Kruskal, hottest first; ties keep edge order so the plan is deterministic.
  std::vector<EdgeId> order(num_edges);
  std::iota(order.begin(), order.end(), 0);
  if (!frequency.empty()) {
    std::stable_sort(order.begin(), order.end(),
                     [&](EdgeId a, EdgeId b) { return frequency[a] > frequency[b]; });
  }
  DisjointSets sets(dag.num_nodes());
  sets.Union(dag.exit(), dag.start());
  ChordPlan plan;
  std::vector<uint8_t> in_tree(num_edges, 0);
  std::vector<std::vector<EdgeId>> tree_adj(dag.num_nodes());
  for (EdgeId e : order) {
    const DagEdge& edge = dag.edge(e);
    if (!sets.Union(edge.from, edge.to)) continue;
    in_tree[e] = 1;
    tree_adj[edge.from].push_back(e);
    tree_adj[edge.to].push_back(e);
  }
  for (EdgeId e = 0; e < num_edges; ++e) {
    if (in_tree[e]) plan.tree_edges.push_back(e);
  }

  // Potentials by a walk over the tree from the start; the exit is joined to it by the implicit
  // zero-valued exit->start edge.
  std::vector<uint64_t> phi(dag.num_nodes(), 0);
  std::vector<uint8_t> seen(dag.num_nodes(), 0);
  std::vector<NodeId> stack = {dag.start()};
  seen[dag.start()] = 1;
  if (dag.exit() != dag.start()) {
    seen[dag.exit()] = 1;
    stack.push_back(dag.exit());
  }
  while (!stack.empty()) {
    const NodeId v = stack.back();
    stack.pop_back();
    for (EdgeId e : tree_adj[v]) {
      const DagEdge& edge = dag.edge(e);
      const NodeId w = edge.from == v ? edge.to : edge.from;
      if (seen[w]) continue;
      seen[w] = 1;
      phi[w] = edge.from == v ? phi[v] + values[e] : phi[v] - values[e];
      stack.push_back(w);
    }
  }
  if (std::count(seen.begin(), seen.end(), 0) != 0) {
    return Error(ErrorCode::kInternal, "chord plan: the spanning tree does not span the DAG");
  }

  plan.increment_by_edge.assign(num_edges, 0);
  for (EdgeId e = 0; e < num_edges; ++e) {
    if (in_tree[e]) continue;
    const DagEdge& edge = dag.edge(e);
    const uint64_t inc = values[e] + phi[edge.from] - phi[edge.to];
    plan.increment_by_edge[e] = static_cast<int64_t>(inc);
    plan.chords.push_back(ChordIncrement{e, static_cast<int64_t>(inc)});
  }
  return plan;
}

}  // namespace pathprof::profiles
