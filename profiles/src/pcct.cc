#include "pathprof/profiles/pcct.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <queue>

namespace pathprof::profiles {
namespace {

uint64_t Scale(uint64_t v, uint64_t num, uint64_t den) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(v) * num / den);
}

}  // namespace

static_assert(PcctChildTable::kNone == kPcctNoNode);

Pcct::Pcct(uint32_t pid, PcctOptions options) : pid_(pid), options_(options) {
  options_.max_walk = std::max<uint32_t>(options_.max_walk, 1);
  options_.max_nodes = std::max<uint32_t>(options_.max_nodes, 4 * options_.max_walk + 2);
  options_.max_threads = std::max<uint32_t>(options_.max_threads, 1);
  nodes_.resize(2);
  edge_change_pos_.resize(2, 0);
  for (NodeRec& r : nodes_) r.live = 1;
  nodes_[kTruncatedRoot].truncated_tree = 1;
}

PcctNodeId Pcct::NewNode(PcctNodeId parent, const StackFrame& frame, uint64_t hash) {
  PcctNodeId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<PcctNodeId>(nodes_.size());
    nodes_.emplace_back();
    edge_change_pos_.push_back(0);
  }
  NodeRec& n = nodes_[id];
  NodeRec& p = nodes_[parent];
  const uint32_t stamp = n.stamp;
  n = NodeRec{};
  n.stamp = stamp;
  n.live = 1;
  n.frame = frame;
  n.parent = parent;
  n.depth = p.depth + 1;
  n.truncated_tree = p.truncated_tree;
  n.next_sibling = p.first_child;
  if (p.first_child != kPcctNoNode) nodes_[p.first_child].prev_sibling = id;
  p.first_child = id;
  children_.Insert(hash, id);
  ++live_;
  ++stats_.nodes_created;
  return id;
}

PcctNodeId Pcct::FindChildLocked(PcctNodeId parent, const StackFrame& frame, uint64_t hash) const {
  return children_.Find(hash, [&](uint32_t id) {
    const NodeRec& n = nodes_[id];
    return n.parent == parent && n.frame == frame;
  });
}

PcctNodeId Pcct::FindOrCreateChild(PcctNodeId parent, const StackFrame& frame, bool* created) {
  const uint64_t hash = PcctChildTable::Hash(parent, frame.function, frame.call_site);
  const PcctNodeId id = FindChildLocked(parent, frame, hash);
  if (id != kPcctNoNode) return id;
  *created = true;
  return NewNode(parent, frame, hash);
}

void Pcct::FreeNode(PcctNodeId id) {
  NodeRec& n = nodes_[id];
  NodeRec& p = nodes_[n.parent];
  if (n.prev_sibling != kPcctNoNode) {
    nodes_[n.prev_sibling].next_sibling = n.next_sibling;
  } else {
    p.first_child = n.next_sibling;
  }
  if (n.next_sibling != kPcctNoNode) nodes_[n.next_sibling].prev_sibling = n.prev_sibling;
  children_.Erase(PcctChildTable::Hash(n.parent, n.frame.function, n.frame.call_site), id);
  by_self_.Erase(id);
  by_edge_.Erase(id);
  edge_change_pos_[id] = 0;  // its pending change, if any, is void
  n.live = 0;
  ++n.stamp;
  free_.push_back(id);
  --live_;
}

void Pcct::EvictForLocked(size_t needed) {
  // One O(n) scan frees a batch of max_nodes/16 nodes, so eviction costs O(1) amortized per node.
  size_t target = std::max<size_t>(needed, options_.max_nodes / 16);
  target = std::min(target, live_);
  ++stats_.eviction_rounds;
  std::vector<PcctNodeId> leaves;
  size_t freed = 0;
  while (freed < target) {
    leaves.clear();
    for (PcctNodeId id = 2; id < nodes_.size(); ++id) {
      if (nodes_[id].live && nodes_[id].first_child == kPcctNoNode) leaves.push_back(id);
    }
    if (leaves.empty()) break;
    const size_t take = std::min(target - freed, leaves.size());
    auto colder = [this](PcctNodeId a, PcctNodeId b) {
      const NodeRec &x = nodes_[a], &y = nodes_[b];
      if (x.total != y.total) return x.total < y.total;
      if (x.depth != y.depth) return x.depth > y.depth;
      return a < b;
    };
    std::nth_element(leaves.begin(), leaves.begin() + static_cast<ptrdiff_t>(take) - 1,
                     leaves.end(), colder);
    for (size_t i = 0; i < take; ++i) {
      stats_.evicted_self_weight += nodes_[leaves[i]].self;
      FreeNode(leaves[i]);
      ++stats_.nodes_evicted;
    }
    freed += take;
  }
}

Pcct::ThreadState& Pcct::ThreadFor(uint32_t tid) {
  ++clock_;
  auto it = threads_.find(tid);
  if (it == threads_.end()) {
    if (threads_.size() >= options_.max_threads) {
      // O(threads) scan, paid only when a new thread arrives at the cap; an LRU list would cost
      // every sample instead.
      auto oldest = threads_.begin();
      for (auto t = threads_.begin(); t != threads_.end(); ++t) {
        if (t->second.last_use < oldest->second.last_use) oldest = t;
      }
      threads_.erase(oldest);
      ++stats_.thread_states_dropped;
    }
    it = threads_.emplace(tid, ThreadState{}).first;
  }
  it->second.last_use = clock_;
  return it->second;
}

Status Pcct::Add(const StackSample& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s.pid != pid_) {
    ++stats_.rejected_samples;
    return Error(ErrorCode::kInvalidArgument, "pcct of pid " + std::to_string(pid_) +
                                                  " got a sample of pid " + std::to_string(s.pid) +
                                                  ": route samples to their process's pcct");
  }
  if (s.frames.empty() || s.weight == 0) {
    ++stats_.rejected_samples;
    return Error(ErrorCode::kInvalidArgument,
                 std::string("pcct sample of tid ") + std::to_string(s.tid) +
                     (s.frames.empty() ? " has no frames" : " has weight 0") +
                     ": the collector must send at least one frame and a positive weight");
  }
  if (options_.purge_every_samples && samples_since_purge_ >= options_.purge_every_samples) {
    PurgeLocked();
  }
  ++samples_since_purge_;
  const size_t n = s.frames.size();
  const uint64_t w = s.weight;
  const size_t walk = options_.max_walk;
  // Make room first: eviction may free nodes that thread caches point at, which the stamps
  // below detect.
  if (live_ + std::min(n, walk) > options_.max_nodes) EvictForLocked(std::min(n, walk));

  ThreadState& ts = ThreadFor(s.tid);
  // Frames are indexed root-side first below: position i is s.frames[n - 1 - i].
  auto frame_at = [&](size_t i) -> const StackFrame& { return s.frames[n - 1 - i]; };

  // Old frames: the root-side common prefix with this thread's previous stack.
  size_t p = 0;
  if (!s.root_truncated && !ts.root_truncated) {
    const size_t m = std::min(n, ts.frames.size());
    while (p < m && ts.frames[p] == frame_at(p)) ++p;
  }
  // Of those, the ones whose node is still in the tree (a freed slot bumps its stamp, so an
  // evicted or purged node, even if reused since, no longer matches). Their totals are bumped on
  // the way, the common case; a truncated sample undoes that below.
  size_t q = 0;
  while (q < p && ts.nodes[q] != kPcctNoNode && nodes_[ts.nodes[q]].stamp == ts.stamps[q]) {
    nodes_[ts.nodes[q]].total += w;
    ++q;
  }

  const bool truncated = s.root_truncated || n - q > walk;
  size_t start;
  PcctNodeId parent;
  ts.nodes.resize(n, kPcctNoNode);
  ts.stamps.resize(n, 0);
  if (!truncated) {
    start = q;
    parent = q ? ts.nodes[q - 1] : kRoot;
    nodes_[kRoot].total += w;
  } else {
    for (size_t i = 0; i < q; ++i) nodes_[ts.nodes[i]].total -= w;
    start = n > walk ? n - walk : 0;
    parent = kTruncatedRoot;
    nodes_[kTruncatedRoot].total += w;
    for (size_t i = 0; i < start; ++i) ts.nodes[i] = kPcctNoNode;
    ++stats_.truncated_samples;
  }
  stats_.old_frames += std::min(p, start);
  stats_.unplaced_frames += start - std::min(p, start);

  // Below a newly created node everything is new, so the child lookups can be skipped (the
  // paper's "stops searching for edges once a new edge is created").
  bool created = false;
  for (size_t i = start; i < n; ++i) {
    const StackFrame& fr = frame_at(i);
    const PcctNodeId id =
        created ? NewNode(parent, fr, PcctChildTable::Hash(parent, fr.function, fr.call_site))
                : FindOrCreateChild(parent, fr, &created);
    NodeRec& nd = nodes_[id];
    nd.total += w;
    if (i >= p) {
      nd.edge += w;
      MarkEdgeChanged(id);
      ++stats_.new_frames;
    } else {
      ++stats_.old_frames;
    }
    ts.nodes[i] = id;
    ts.stamps[i] = nd.stamp;
    parent = id;
  }
  NodeRec& leaf = nodes_[parent];
  leaf.self += w;
  by_self_.Set(parent, leaf.self);

  ts.frames.resize(n);
  for (size_t i = p; i < n; ++i) ts.frames[i] = frame_at(i);
  ts.root_truncated = s.root_truncated;
  ++stats_.samples;
  stats_.weight += w;
  return Status::Ok();
}

PcctNode Pcct::ViewLocked(PcctNodeId id) const {
  const NodeRec& r = nodes_[id];
  PcctNode v;
  v.id = id;
  v.parent = r.parent;
  v.frame = r.frame;
  v.depth = r.depth;
  v.under_truncated_root = r.truncated_tree != 0;
  v.self = r.self;
  v.total = r.total;
  v.edge = r.edge;
  return v;
}

std::vector<PcctNode> Pcct::TopBySelf(size_t k) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PcctNode> out;
  for (const auto& [id, w] : by_self_.Top(k)) out.push_back(ViewLocked(id));
  return out;
}

// Out of line on purpose: inlined into Add it made the unchanged-stack case ~30% slower (same
// instruction count, code layout), for a ~10% gain on all-new samples.
void Pcct::MarkEdgeChanged(PcctNodeId id) {
  edge_changes_.push_back(id);
  edge_change_pos_[id] = static_cast<uint32_t>(edge_changes_.size());
  if (edge_changes_.size() >= edge_flush_at_) FlushEdgeIndexLocked();
}

void Pcct::FlushEdgeIndexLocked() const {
  for (size_t i = 0; i < edge_changes_.size(); ++i) {
    const PcctNodeId id = edge_changes_[i];
    if (edge_change_pos_[id] != i + 1) continue;  // a later entry, or a freed node
    edge_change_pos_[id] = 0;
    by_edge_.Set(id, nodes_[id].edge);
  }
  edge_changes_.clear();
  // Bounds the log's memory by the tree's size; replaying it costs O(1) per entry, so the
  // amortized cost per change stays O(1).
  edge_flush_at_ = 4 * nodes_.size() + 4096;
}

std::vector<PcctNode> Pcct::TopByEdge(size_t k) const {
  std::lock_guard<std::mutex> lock(mu_);
  FlushEdgeIndexLocked();
  std::vector<PcctNode> out;
  for (const auto& [id, w] : by_edge_.Top(k)) out.push_back(ViewLocked(id));
  return out;
}

std::vector<PcctNode> Pcct::TopByTotal(size_t k) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PcctNode> out;
  // Max-heap on (total, lower id first). A node's total bounds its subtree's, so the k-th pop is
  // the k-th heaviest node overall.
  using Entry = std::pair<uint64_t, PcctNodeId>;
  auto less = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(less)> heap(less);
  auto push_children = [&](PcctNodeId id) {
    for (PcctNodeId c = nodes_[id].first_child; c != kPcctNoNode; c = nodes_[c].next_sibling) {
      if (nodes_[c].total > 0) heap.emplace(nodes_[c].total, c);
    }
  };
  push_children(kRoot);
  push_children(kTruncatedRoot);
  while (out.size() < k && !heap.empty()) {
    const PcctNodeId id = heap.top().second;
    heap.pop();
    out.push_back(ViewLocked(id));
    push_children(id);
  }
  return out;
}

std::optional<PcctNode> Pcct::Node(PcctNodeId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (id >= nodes_.size() || !nodes_[id].live) return std::nullopt;
  return ViewLocked(id);
}

std::vector<PcctNode> Pcct::Children(PcctNodeId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PcctNode> out;
  if (id >= nodes_.size() || !nodes_[id].live) return out;
  for (PcctNodeId c = nodes_[id].first_child; c != kPcctNoNode; c = nodes_[c].next_sibling) {
    out.push_back(ViewLocked(c));
  }
  return out;
}

std::vector<PcctNode> Pcct::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PcctNode> out;
  std::deque<PcctNodeId> queue{kRoot, kTruncatedRoot};
  while (!queue.empty()) {
    const PcctNodeId id = queue.front();
    queue.pop_front();
    if (id >= nodes_.size() || !nodes_[id].live) continue;
    for (PcctNodeId c = nodes_[id].first_child; c != kPcctNoNode; c = nodes_[c].next_sibling) {
      out.push_back(ViewLocked(c));
      queue.push_back(c);
    }
  }
  return out;
}

std::optional<PcctNode> Pcct::Find(const std::vector<StackFrame>& path, PcctNodeId root) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (root != kRoot && root != kTruncatedRoot) return std::nullopt;
  PcctNodeId id = root;
  for (const StackFrame& f : path) {
    id = FindChildLocked(id, f, PcctChildTable::Hash(id, f.function, f.call_site));
    if (id == kPcctNoNode) return std::nullopt;
  }
  return ViewLocked(id);
}

std::vector<StackFrame> Pcct::Context(PcctNodeId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StackFrame> out;
  if (id >= nodes_.size() || !nodes_[id].live) return out;
  for (; id != kRoot && id != kTruncatedRoot; id = nodes_[id].parent) {
    out.push_back(nodes_[id].frame);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

PcctNodeId Pcct::Place(const std::vector<StackFrame>& frames, bool root_truncated) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = frames.size();
  if (n == 0) return kPcctNoNode;
  const size_t walk = options_.max_walk;
  const bool truncated = root_truncated || n > walk;
  const size_t placed = std::min(n, walk);
  if (live_ + placed > options_.max_nodes) EvictForLocked(placed);
  PcctNodeId parent = truncated ? kTruncatedRoot : kRoot;
  bool created = false;
  for (size_t i = placed; i-- > 0;) {  // root side first
    const StackFrame& fr = frames[i];
    parent = created ? NewNode(parent, fr, PcctChildTable::Hash(parent, fr.function, fr.call_site))
                     : FindOrCreateChild(parent, fr, &created);
  }
  return parent;
}

bool Pcct::UnderTruncatedRoot(PcctNodeId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < nodes_.size() && nodes_[id].live && nodes_[id].truncated_tree;
}

std::vector<std::pair<std::string, double>> Pcct::ContextWeights() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, double>> out;
  // Iterative DFS (trees can be deeper than the C++ stack likes) carrying the context text.
  std::string ctx;
  std::vector<std::pair<PcctNodeId, size_t>> stack;  // node, ctx length before its frame
  for (PcctNodeId root : {kRoot, kTruncatedRoot}) {
    ctx = root == kRoot ? "[root]" : "[truncated]";
    for (PcctNodeId c = nodes_[root].first_child; c != kPcctNoNode; c = nodes_[c].next_sibling) {
      stack.emplace_back(c, ctx.size());
    }
    while (!stack.empty()) {
      const auto [id, len] = stack.back();
      stack.pop_back();
      const NodeRec& r = nodes_[id];
      ctx.resize(len);
      char buf[48];
      std::snprintf(buf, sizeof buf, "/%" PRIx64 "@%" PRIx64, r.frame.function, r.frame.call_site);
      ctx += buf;
      if (r.self) out.emplace_back("node " + ctx, static_cast<double>(r.self));
      if (r.edge) out.emplace_back("edge " + ctx, static_cast<double>(r.edge));
      for (PcctNodeId c = r.first_child; c != kPcctNoNode; c = nodes_[c].next_sibling) {
        stack.emplace_back(c, ctx.size());
      }
    }
  }
  return out;
}

size_t Pcct::node_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

PcctStats Pcct::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Pcct::RebuildIndexesLocked() {
  by_self_.Clear();
  by_edge_.Clear();
  edge_changes_.clear();
  std::fill(edge_change_pos_.begin(), edge_change_pos_.end(), 0);
  for (PcctNodeId id = 2; id < nodes_.size(); ++id) {
    if (!nodes_[id].live) continue;
    by_self_.Set(id, nodes_[id].self);
    by_edge_.Set(id, nodes_[id].edge);
  }
}

void Pcct::Purge() {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked();
}

void Pcct::PurgeLocked() {
  free_.clear();
  for (PcctNodeId id = static_cast<PcctNodeId>(nodes_.size()); id-- > 2;) {
    NodeRec& n = nodes_[id];
    if (n.live) ++n.stamp;
    const uint32_t stamp = n.stamp;
    n = NodeRec{};
    n.stamp = stamp;
    free_.push_back(id);
  }
  for (PcctNodeId root : {kRoot, kTruncatedRoot}) {
    NodeRec& r = nodes_[root];
    r.first_child = kPcctNoNode;
    r.self = r.total = r.edge = 0;
  }
  children_.Clear();
  by_self_.Clear();
  by_edge_.Clear();
  edge_changes_.clear();
  std::fill(edge_change_pos_.begin(), edge_change_pos_.end(), 0);
  live_ = 0;
  samples_since_purge_ = 0;
  ++stats_.purges;
}

Status Pcct::Decay(uint64_t numerator, uint64_t denominator) {
  std::lock_guard<std::mutex> lock(mu_);
  if (numerator == 0 || denominator == 0 || numerator > denominator) {
    return Error(ErrorCode::kInvalidArgument,
                 "pcct decay factor " + std::to_string(numerator) + "/" +
                     std::to_string(denominator) +
                     " is outside (0, 1]: use Purge to clear, a smaller numerator to decay");
  }
  std::vector<PcctNodeId> order;
  for (PcctNodeId id = 0; id < nodes_.size(); ++id) {
    NodeRec& n = nodes_[id];
    if (!n.live) continue;
    n.self = Scale(n.self, numerator, denominator);
    n.total = Scale(n.total, numerator, denominator);
    n.edge = Scale(n.edge, numerator, denominator);
    if (id >= 2) order.push_back(id);
  }
  // Children before parents, so that a chain of emptied nodes goes in one pass.
  std::sort(order.begin(), order.end(),
            [this](PcctNodeId a, PcctNodeId b) { return nodes_[a].depth > nodes_[b].depth; });
  for (PcctNodeId id : order) {
    const NodeRec& n = nodes_[id];
    if (n.first_child == kPcctNoNode && n.total == 0 && n.edge == 0) {
      FreeNode(id);
      ++stats_.nodes_pruned;
    }
  }
  RebuildIndexesLocked();
  ++stats_.decays;
  return Status::Ok();
}

void Pcct::ForgetThread(uint32_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  threads_.erase(tid);
}

}  // namespace pathprof::profiles
