// The partial calling context tree (PCCT) of [Whaley 2000] §5 and §6 (see docs/references.md),
// built from stack samples of one process.
//
// Each node is one calling context: the path of (function, call site) pairs from the thread root.
// Recursion keeps full context (fig. 9c): each recursive activation is its own node.
//  - self weight: sample weight for which the node was the leaf (the paper's node time);
//  - edge weight (on the node's incoming edge): sample weight of samples in which the node's frame
//    was new, i.e. one count per sampled activation (weighted), which tells frequently called
//    contexts from long-running ones (section 5.1);
//  - total weight: inclusive weight, every sample whose stack passes through the node.
//
// New vs old frames: eBPF stacks carry no marker bit, so a frame is old when it lies in the
// root-side common prefix with the same thread's previous sample (same (function, call site) at the
// same depth). A new activation that repeats the previous one exactly is therefore taken as old;
// that is the price of not writing into the target's stack.
//
// Bounded walk (section 5.4.1): at most `max_walk` frames are placed per sample. When more frames
// than that need placing (a deep new call chain since the last sample, or a stack the collector cut
// on the root side), the leafmost `max_walk` frames hang under a separate "[truncated]" root
// (fig. 10): the profile point is kept, its context is partial.
//
// Memory bound: at most `max_nodes` nodes; when full, the coldest leaves (least total weight) are
// evicted in a batch. Evicted weight stays in the ancestors' totals and is counted in stats.
//
// Thread safety: every public method takes an internal mutex, so one PCCT per process can be read
// (top-k, correlation, export) while collector threads add samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/pcct_child_table.h"
#include "pathprof/profiles/pcct_weight_index.h"

namespace pathprof::profiles {

struct StackFrame {
  uint64_t function = 0;   // function id: entry address or symbol id
  uint64_t call_site = 0;  // where the caller called this activation from (call instruction or
                           // return address); 0 for the outermost frame
  bool operator==(const StackFrame&) const = default;
};

struct StackSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t weight = 1;  // samples, nanoseconds of CPU time, or events: one unit per profile
  // The collector cut the stack on the root side (e.g. bpf_get_stack's frame limit): the
  // outermost frame is not the thread's root, so the sample cannot be attached to the tree.
  bool root_truncated = false;
  std::vector<StackFrame> frames;  // leaf first, root last
};

struct PcctOptions {
  uint32_t max_walk = 64;         // frames placed per sample (the paper's BUFSIZE, 16 there)
  uint32_t max_nodes = 1u << 20;  // memory bound; raised to at least 4 * max_walk + 2
  uint32_t max_threads = 65536;   // per-thread "previous stack" states kept
  // Purge on an interval: every this many accepted samples the tree is cleared before the next
  // one is added (the paper's periodic purge). 0 keeps the profile cumulative.
  uint64_t purge_every_samples = 0;
};

struct PcctStats {
  uint64_t samples = 0;            // accepted samples
  uint64_t weight = 0;             // their total weight
  uint64_t rejected_samples = 0;   // empty stack, zero weight or another pid (Add returns why)
  uint64_t truncated_samples = 0;  // placed under the "[truncated]" root
  uint64_t new_frames = 0;         // frames whose edge weight was incremented
  uint64_t old_frames = 0;         // frames in the common prefix with the thread's last sample
  uint64_t unplaced_frames = 0;    // new frames beyond the walk bound of a truncated sample
  uint64_t nodes_created = 0;
  uint64_t nodes_evicted = 0;  // by the memory bound
  uint64_t evicted_self_weight = 0;
  uint64_t eviction_rounds = 0;
  uint64_t nodes_pruned = 0;           // dropped by Decay when their weights reached zero
  uint64_t thread_states_dropped = 0;  // by max_threads (that thread's next frames count as new)
  uint64_t purges = 0;
  uint64_t decays = 0;
};

using PcctNodeId = uint32_t;
inline constexpr PcctNodeId kPcctNoNode = UINT32_MAX;

struct PcctNode {
  PcctNodeId id = kPcctNoNode;
  PcctNodeId parent = kPcctNoNode;  // a root's parent is kPcctNoNode
  StackFrame frame;
  uint32_t depth = 0;  // 1 for the outermost frame under a root
  bool under_truncated_root = false;
  uint64_t self = 0;
  uint64_t total = 0;
  uint64_t edge = 0;
};

class Pcct {
 public:
  // The root of attached contexts and the root of partial ones (fig. 10).
  static constexpr PcctNodeId kRoot = 0;
  static constexpr PcctNodeId kTruncatedRoot = 1;

  explicit Pcct(uint32_t pid, PcctOptions options = {});
  Pcct(const Pcct&) = delete;
  Pcct& operator=(const Pcct&) = delete;

  uint32_t pid() const { return pid_; }
  const PcctOptions& options() const { return options_; }

  // Adds one sample. Rejects (and counts) an empty stack, a zero weight and another pid.
  Status Add(const StackSample& sample);

  // Hottest nodes, heaviest first; roots are never reported. By self and by edge weight in O(k)
  // from sorted indexes. By total weight by a best-first descent from the roots (a child's total
  // never exceeds its parent's): O((k + c) log(k + c)), c the children of the k nodes returned.
  std::vector<PcctNode> TopBySelf(size_t k) const;
  std::vector<PcctNode> TopByEdge(size_t k) const;
  std::vector<PcctNode> TopByTotal(size_t k) const;

  std::optional<PcctNode> Node(PcctNodeId id) const;
  std::vector<PcctNode> Children(PcctNodeId id) const;
  // Every live node under both roots (roots excluded), taken under one lock so that a reader
  // walking it sees one consistent tree: breadth-first, parents before their children, siblings
  // in the order Children gives them.
  std::vector<PcctNode> Snapshot() const;
  // The node reached from `root` by `path` (root-side first), if present.
  std::optional<PcctNode> Find(const std::vector<StackFrame>& path, PcctNodeId root = kRoot) const;
  // root-side first frames from the node's root down to the node.
  std::vector<StackFrame> Context(PcctNodeId id) const;
  // The node of a calling context, created with zero weights where missing, without counting a
  // sample: branch windows name their context this way (docs/profiles.md, "Hot paths per
  // calling context"). `frames` leaf first, as in StackSample; a stack cut on the root side, or
  // deeper than max_walk (its leafmost max_walk frames kept), hangs under kTruncatedRoot.
  // kPcctNoNode for an empty stack. Weightless nodes are the first the memory bound evicts.
  PcctNodeId Place(const std::vector<StackFrame>& frames, bool root_truncated);
  // Whether the node is under kTruncatedRoot (false for a node not in the tree).
  bool UnderTruncatedRoot(PcctNodeId id) const;

  // Weights keyed by textual context, for the correlation of section 6.1: one entry per node
  // ("node <ctx>", self weight) and per edge ("edge <ctx>", edge weight), non-zero only, where
  // <ctx> is the root..node path "[root]/f@cs/f@cs..." in hex ("[truncated]/..." for partial ones).
  std::vector<std::pair<std::string, double>> ContextWeights() const;

  size_t node_count() const;  // live nodes, roots excluded
  PcctStats stats() const;

  // Drops all nodes and weights (the paper's periodic purge). Threads keep their last stack, so a
  // long-running activation seen before the purge is not counted as a new call after it.
  void Purge();
  // Multiplies every weight by numerator/denominator (< 1, e.g. 1/2 for exponential decay), then
  // drops nodes whose weights all reached zero. Rejects a factor outside (0, 1].
  Status Decay(uint64_t numerator, uint64_t denominator);
  // Forgets a thread's previous stack (thread exit).
  void ForgetThread(uint32_t tid);

 private:
  // 64 bytes, one cache line: every sample touches one node per frame.
  struct alignas(64) NodeRec {
    StackFrame frame;
    PcctNodeId parent = kPcctNoNode;
    PcctNodeId first_child = kPcctNoNode;
    PcctNodeId next_sibling = kPcctNoNode;
    PcctNodeId prev_sibling = kPcctNoNode;
    uint32_t depth : 30 = 0;
    uint32_t live : 1 = 0;
    uint32_t truncated_tree : 1 = 0;
    uint32_t stamp = 0;  // bumped when the slot is freed, so stale thread caches notice
    uint64_t self = 0;
    uint64_t total = 0;
    uint64_t edge = 0;
  };
  static_assert(sizeof(NodeRec) == 64);

  struct ThreadState {
    std::vector<StackFrame> frames;  // previous sample, root-side first
    std::vector<PcctNodeId> nodes;   // its node per frame, kPcctNoNode where not placed
    std::vector<uint32_t> stamps;
    bool root_truncated = false;
    uint64_t last_use = 0;
  };

  PcctNode ViewLocked(PcctNodeId id) const;
  PcctNodeId FindChildLocked(PcctNodeId parent, const StackFrame& frame, uint64_t hash) const;
  PcctNodeId FindOrCreateChild(PcctNodeId parent, const StackFrame& frame, bool* created);
  PcctNodeId NewNode(PcctNodeId parent, const StackFrame& frame, uint64_t hash);
  void FreeNode(PcctNodeId id);
  void EvictForLocked(size_t needed);
  ThreadState& ThreadFor(uint32_t tid);
  void RebuildIndexesLocked();
  void PurgeLocked();
  void MarkEdgeChanged(PcctNodeId id);
  void FlushEdgeIndexLocked() const;

  const uint32_t pid_;
  PcctOptions options_;
  mutable std::mutex mu_;
  std::vector<NodeRec> nodes_;
  std::vector<PcctNodeId> free_;
  size_t live_ = 0;  // roots excluded
  PcctChildTable children_;
  std::unordered_map<uint32_t, ThreadState> threads_;
  uint64_t clock_ = 0;
  uint64_t samples_since_purge_ = 0;
  WeightIndex by_self_;
  // The edge index is brought up to date lazily (before a query, or when the change log grows
  // past a bound): an all-new 64-frame sample changes 64 edge weights, and re-filing each of them
  // every sample cost more than the rest of the update. Replaying only each node's latest change,
  // in change order, leaves the index exactly as eager updates would (same ties order).
  mutable WeightIndex by_edge_;
  mutable std::vector<PcctNodeId> edge_changes_;  // ids, in the order their edge weight changed
  // Per node slot: 1 + the position of the node's latest entry in edge_changes_, 0 if none.
  mutable std::vector<uint32_t> edge_change_pos_;
  mutable size_t edge_flush_at_ = 4096;  // log length that triggers a replay
  PcctStats stats_;
};

}  // namespace pathprof::profiles
