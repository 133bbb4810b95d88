#include "pathprof/profiles/cfg.h"

#include <cctype>

namespace pathprof::profiles {

Result<NodeId> Cfg::AddNode(std::string name, uint64_t address) {
  if (name.empty()) return Error(ErrorCode::kInvalidArgument, "cfg: a node needs a non-empty name");
  if (by_name_.count(name) != 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "cfg: duplicate node name '" + name + "'; give each block a unique name");
  }
  if (nodes_.size() >= kNoNode) {
    return Error(ErrorCode::kResourceExhausted, "cfg: too many nodes for 32-bit node ids");
  }
  const NodeId id = static_cast<NodeId>(nodes_.size());
  by_name_.emplace(name, id);
  nodes_.push_back(CfgNode{id, std::move(name), address});
  out_.emplace_back();
  return id;
}

Result<EdgeId> Cfg::AddEdge(NodeId from, NodeId to) {
  if (from >= nodes_.size() || to >= nodes_.size()) {
    return Error(ErrorCode::kInvalidArgument, "cfg: edge " + std::to_string(from) + "->" +
                                                  std::to_string(to) +
                                                  " names a node that does not exist (graph has " +
                                                  std::to_string(nodes_.size()) + " nodes)");
  }
  if (int64_t existing = FindEdge(from, to); existing >= 0) return static_cast<EdgeId>(existing);
  if (edges_.size() >= UINT32_MAX) {
    return Error(ErrorCode::kResourceExhausted, "cfg: too many edges for 32-bit edge ids");
  }
  const EdgeId id = static_cast<EdgeId>(edges_.size());
  edges_.push_back(CfgEdge{id, from, to});
  out_[from].push_back(id);
  return id;
}

Status Cfg::SetEntry(NodeId entry) {
  if (entry >= nodes_.size()) {
    return Error(ErrorCode::kInvalidArgument,
                 "cfg: entry node " + std::to_string(entry) + " does not exist");
  }
  entry_ = entry;
  return Status::Ok();
}

NodeId Cfg::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoNode : it->second;
}

int64_t Cfg::FindEdge(NodeId from, NodeId to) const {
  if (from >= out_.size()) return -1;
  for (EdgeId e : out_[from]) {
    if (edges_[e].to == to) return e;
  }
  return -1;
}

Result<Cfg> Cfg::FromEdgeList(std::span<const std::pair<std::string, std::string>> edges,
                              std::string_view entry_name) {
  Cfg cfg;
  auto node_of = [&cfg](const std::string& name) -> Result<NodeId> {
    NodeId id = cfg.FindNode(name);
    if (id != kNoNode) return id;
    return cfg.AddNode(name);
  };
  for (const auto& [from_name, to_name] : edges) {
    PATHPROF_ASSIGN_OR_RETURN(NodeId from, node_of(from_name));
    PATHPROF_ASSIGN_OR_RETURN(NodeId to, node_of(to_name));
    PATHPROF_RETURN_IF_ERROR(cfg.AddEdge(from, to).status());
  }
  NodeId entry = cfg.FindNode(entry_name);
  if (entry == kNoNode) {
    return Error(ErrorCode::kInvalidArgument,
                 "cfg: entry node '" + std::string(entry_name) +
                     "' is not mentioned by any edge; name the function's first block");
  }
  PATHPROF_RETURN_IF_ERROR(cfg.SetEntry(entry));
  return cfg;
}

Result<Cfg> Cfg::Parse(std::string_view text, std::string_view entry_name) {
  std::vector<std::pair<std::string, std::string>> edges;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(",\n", pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view original = text.substr(pos, end - pos);
    std::string item(original);
    pos = end + 1;
    for (char& c : item) {
      if (c == '-' || c == '>') c = ' ';
    }
    std::vector<std::string> words;
    std::string word;
    for (char c : item) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
      } else {
        word.push_back(c);
      }
    }
    if (!word.empty()) words.push_back(std::move(word));
    if (words.empty()) continue;
    if (words.size() != 2) {
      return Error(ErrorCode::kInvalidArgument,
                   "cfg: cannot parse edge '" + std::string(original) +
                       "'; write each edge as 'from to' or 'from->to'");
    }
    edges.emplace_back(std::move(words[0]), std::move(words[1]));
  }
  return FromEdgeList(edges, entry_name);
}

}  // namespace pathprof::profiles
