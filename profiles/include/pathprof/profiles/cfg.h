// A function's control-flow graph as the path numbering code sees it: basic blocks (nodes) with
// a name and a start address, directed edges between them, and one entry block. Built by hand or
// from an edge list for now; a later stage recovers it from the binary.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::profiles {

using NodeId = uint32_t;
using EdgeId = uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;

struct CfgNode {
  NodeId id = kNoNode;
  std::string name;
  uint64_t address = 0;  // start address of the block; 0 when built by hand
};

struct CfgEdge {
  EdgeId id = 0;
  NodeId from = kNoNode;
  NodeId to = kNoNode;
};

class Cfg {
 public:
  Cfg() = default;

  // "s a, s b, a c" style input: nodes are created in order of first mention, edges in list
  // order (edge order fixes the order of a node's successors, which the numbering depends on).
  static Result<Cfg> FromEdgeList(std::span<const std::pair<std::string, std::string>> edges,
                                  std::string_view entry_name);
  // Same, parsed from text: edges separated by ',' or newlines, each "from to" or "from->to".
  static Result<Cfg> Parse(std::string_view text, std::string_view entry_name);

  // Names must be unique and non-empty.
  Result<NodeId> AddNode(std::string name, uint64_t address = 0);
  // A second edge between the same two blocks (a conditional branch whose target is also its
  // fall-through) is the same control flow: the existing edge id is returned.
  Result<EdgeId> AddEdge(NodeId from, NodeId to);
  Status SetEntry(NodeId entry);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_edges() const { return edges_.size(); }
  const CfgNode& node(NodeId id) const { return nodes_[id]; }
  const CfgEdge& edge(EdgeId id) const { return edges_[id]; }
  const std::vector<CfgNode>& nodes() const { return nodes_; }
  const std::vector<CfgEdge>& edges() const { return edges_; }
  // Outgoing edges of a node, in insertion order.
  const std::vector<EdgeId>& out_edges(NodeId id) const { return out_[id]; }
  NodeId entry() const { return entry_; }
  // kNoNode when there is no node of that name.
  NodeId FindNode(std::string_view name) const;
  // The edge from -> to, or -1 when there is none.
  int64_t FindEdge(NodeId from, NodeId to) const;

 private:
  std::vector<CfgNode> nodes_;
  std::vector<CfgEdge> edges_;
  std::vector<std::vector<EdgeId>> out_;
  std::unordered_map<std::string, NodeId> by_name_;
  NodeId entry_ = kNoNode;
};

}  // namespace pathprof::profiles
