// ProfileStore's stack queries: the calling-context tree (with the branch windows attributed to
// each context), hot call pairs, hot methods and the sampled addresses of a leaf function.
#include <algorithm>
#include <deque>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "kernel_keys.h"
#include "profile_store_impl.h"

namespace pathprof::pipeline {
namespace {

// A call site is a return address: its file, line and inline frames are the call's, one byte
// back (as perf and pprof read callers); its address and offset stay the return address.
Location CallSiteLocation(SymbolService& symbols, uint32_t pid, const decoders::AddressSpace& space,
                          uint64_t return_address) {
  Location l = symbols.Symbolize(pid, space, return_address - 1);
  l.address = return_address;
  if (!l.function.empty()) ++l.offset;
  for (Location& f : l.inlined_by) f.address = return_address;
  return l;
}

}  // namespace

std::vector<std::pair<Location, uint64_t>> ProfileStore::LeafAddresses(
    uint64_t function_start) const {
  const Impl& s = *impl_;
  std::vector<std::pair<uint64_t, uint64_t>> counts;
  decoders::AddressSpace space;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.leaf_addresses.find(function_start);
    if (it == s.leaf_addresses.end()) return {};
    counts.assign(it->second.begin(), it->second.end());
    space = s.space;
  }
  std::sort(counts.begin(), counts.end());
  std::vector<std::pair<Location, uint64_t>> out;
  out.reserve(counts.size());
  for (const auto& [address, n] : counts)
    out.emplace_back(s.symbols->Symbolize(s.pid, space, address), n);
  return out;
}

CallingContextTree ProfileStore::Cct(const CctQuery& query) const {
  const Impl& s = *impl_;
  CallingContextTree out;
  // One copy of the tree and its totals, taken under the lock that Add holds while it feeds the
  // tree; the walk and the naming below read only the copy.
  std::vector<profiles::PcctNode> nodes;
  profiles::PcctStats st;
  decoders::AddressSpace space;
  // Branch windows attributed to each node (its own context and those below it).
  std::unordered_map<profiles::PcctNodeId, uint64_t> windows_of;
  bool kernel_by_address = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    nodes = s.pcct->Snapshot();
    st = s.pcct->stats();
    space = s.space;
    kernel_by_address = !s.kernel_address_keys.empty();
    s.contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context& c) {
      const profiles::PcctNodeId id = s.LiveNodeLocked(k, c.node);
      if (id != profiles::kPcctNoNode) windows_of[id] += c.windows;
    });
  }
  // Kernel frames keyed by address become one node per function where one may be shown (a
  // re-rooted tree compares every node's name); else they stay below the weight shown.
  const double min_weight = query.min_weight * static_cast<double>(st.weight);
  if (kernel_by_address &&
      (!query.root_function.empty() || KernelNodeMayWeigh(nodes, min_weight))) {
    std::unordered_map<profiles::PcctNodeId, profiles::PcctNodeId> merged_into;
    nodes = MergeKernelNodes(
        nodes, [&](uint64_t a) { return s.symbols->KernelFunctionStart(a); }, &merged_into);
    std::unordered_map<profiles::PcctNodeId, uint64_t> moved;
    for (const auto& [id, w] : windows_of)
      moved[merged_into.contains(id) ? merged_into[id] : id] += w;
    windows_of.swap(moved);
  }
  std::unordered_map<profiles::PcctNodeId, std::vector<size_t>> children_of;
  std::unordered_map<profiles::PcctNodeId, profiles::PcctNodeId> parent_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    children_of[nodes[i].parent].push_back(i);
    parent_of[nodes[i].id] = nodes[i].parent;
  }
  {
    std::unordered_map<profiles::PcctNodeId, uint64_t> own;
    own.swap(windows_of);
    for (const auto& [id, w] : own)
      for (auto at = parent_of.find(id); at != parent_of.end(); at = parent_of.find(at->second))
        windows_of[at->first] += w;
  }
  auto windows_at = [&](profiles::PcctNodeId id) {
    auto it = windows_of.find(id);
    return it == windows_of.end() ? uint64_t{0} : it->second;
  };
  auto children = [&](profiles::PcctNodeId id) {
    std::vector<const profiles::PcctNode*> out_children;
    if (auto it = children_of.find(id); it != children_of.end())
      for (size_t i : it->second) out_children.push_back(&nodes[i]);
    return out_children;
  };
  out.samples = st.samples;
  out.total_weight = static_cast<double>(st.weight);

  std::unordered_map<uint64_t, Location> names;
  auto name_of = [&](uint64_t fn) -> const Location& {
    auto it = names.find(fn);
    if (it == names.end()) it = names.emplace(fn, s.symbols->Symbolize(s.pid, space, fn)).first;
    return it->second;
  };
  struct Item {
    profiles::PcctNode node;
    uint64_t parent_out;  // id in the output, 0 for a root
    uint32_t depth;
  };
  std::deque<Item> queue;
  uint64_t next_id = 1;
  auto push_children = [&](profiles::PcctNodeId id, uint64_t parent_out, uint32_t depth) {
    for (const profiles::PcctNode* c : children(id)) {
      // A node lighter than the bound is left out, windows or not (the bound is a share of the
      // stack weight: a light node kept for its windows broke `tree --min-weight`); a node no
      // stack sample passed through stays visible while branch windows name it and no bound is
      // set (or no sample has arrived at all, where the bound is 0 too).
      if (double(c->total) < min_weight || (c->total == 0 && windows_at(c->id) == 0)) continue;
      queue.push_back({*c, parent_out, depth});
    }
  };
  if (query.root_function.empty()) {
    push_children(profiles::Pcct::kRoot, 0, 1);
    push_children(profiles::Pcct::kTruncatedRoot, 0, 1);
  } else {
    // Re-rooted: every node of the function becomes a root (breadth-first over the whole tree).
    std::deque<profiles::PcctNodeId> all{profiles::Pcct::kRoot, profiles::Pcct::kTruncatedRoot};
    size_t visited = 0;
    while (!all.empty() && visited < 1000000) {
      const profiles::PcctNodeId id = all.front();
      all.pop_front();
      for (const profiles::PcctNode* c : children(id)) {
        ++visited;
        if (name_of(c->frame.function).function == query.root_function) {
          if (double(c->total) >= min_weight) queue.push_back({*c, 0, 1});
        } else {
          all.push_back(c->id);
        }
      }
    }
  }
  while (!queue.empty() && out.nodes.size() < query.max_nodes) {
    Item item = std::move(queue.front());
    queue.pop_front();
    CctNode n;
    n.id = next_id++;
    n.parent_id = item.parent_out;
    n.pid = s.pid;
    n.function = name_of(item.node.frame.function);
    if (item.parent_out != 0 && item.node.frame.call_site != 0)
      n.call_site = CallSiteLocation(*s.symbols, s.pid, space, item.node.frame.call_site);
    n.self_weight = double(item.node.self);
    n.total_weight = double(item.node.total);
    n.edge_weight = double(item.node.edge);
    n.truncated = item.node.under_truncated_root;
    n.context_id = item.node.id;
    n.windows = windows_at(item.node.id);
    out.nodes.push_back(n);
    if (item.depth < query.max_depth) push_children(item.node.id, n.id, item.depth + 1);
  }
  return out;
}

HotCallPairsResult ProfileStore::HotCallPairs(uint32_t top_k) const {
  const Impl& s = *impl_;
  HotCallPairsResult out;
  std::vector<std::pair<profiles::CallPair, uint64_t>> top;
  double total = 0;
  decoders::AddressSpace space;
  std::string comm;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    top = s.call_pairs.Top(top_k);
    total = double(s.call_pairs.total());
    space = s.space;
    comm = s.info.comm;
  }
  out.total = total;
  for (const auto& [pair, count] : top) {
    CallPair p;
    p.pid = s.pid;
    p.comm = comm;
    p.call_site = s.symbols->Symbolize(s.pid, space, pair.call_site);
    p.target = s.symbols->Symbolize(s.pid, space, pair.target);
    p.estimate.value = double(count);
    p.estimate.share = total > 0 ? double(count) / total : 0;
    out.pairs.push_back(std::move(p));
  }
  return out;
}

HotMethodsResult ProfileStore::HotMethods(uint32_t top_k) const {
  const Impl& s = *impl_;
  HotMethodsResult out;
  out.hot_data_streams_unsupported =
      profiles::HpsSupport(profiles::HpsProfileType::kHotDataStream).message();
  std::vector<std::pair<uint64_t, uint64_t>> by_self, by_entries;
  double self_total = 0, entries_total = 0;
  decoders::AddressSpace space;
  std::string comm;
  std::unordered_map<uint64_t, uint64_t> self_of, entries_of;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Kernel frames keyed by address: every entry, so that a kernel function's addresses add up
    // before the top is cut (kernel_keys.h).
    by_self = s.kernel_address_keys.empty()
                  ? s.methods_from_stacks.Top(top_k)
                  : TopWithKernelMerged(
                        s.methods_from_stacks.Top(std::numeric_limits<size_t>::max()), top_k,
                        [&](uint64_t a) { return s.symbols->KernelFunctionStart(a); });
    by_entries = s.methods_from_branches.Top(top_k);
    self_total = double(s.methods_from_stacks.total());
    entries_total = double(s.methods_from_branches.total());
    out.self_total = self_total;
    out.entries_total = entries_total;
    comm = s.info.comm;
    for (const auto& [fn, w] : by_self) entries_of[fn] = s.methods_from_branches.Count(fn);
    for (const auto& [fn, w] : by_entries) self_of[fn] = s.methods_from_stacks.Count(fn);
    space = s.space;
  }
  // Ranked by stack self weight (CPU), then methods only branch windows saw, by entries.
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> rows;  // fn, self, entries
  std::unordered_set<uint64_t> seen;
  for (const auto& [fn, w] : by_self) rows.emplace_back(fn, w, entries_of[fn]), seen.insert(fn);
  for (const auto& [fn, w] : by_entries)
    if (!seen.contains(fn)) rows.emplace_back(fn, self_of[fn], w);
  if (rows.size() > top_k) rows.resize(top_k);
  for (const auto& [fn, self, entries] : rows) {
    HotMethod m;
    m.pid = s.pid;
    m.comm = comm;
    m.function = s.symbols->Symbolize(s.pid, space, fn);
    m.self.value = double(self);
    m.self.share = self_total > 0 ? double(self) / self_total : 0;
    m.entries.value = double(entries);
    m.entries.share = entries_total > 0 ? double(entries) / entries_total : 0;
    out.methods.push_back(std::move(m));
  }
  return out;
}

}  // namespace pathprof::pipeline
