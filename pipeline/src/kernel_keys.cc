#include "kernel_keys.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "pathprof/decoders/address_space.h"

namespace pathprof::pipeline {

std::vector<std::pair<uint64_t, uint64_t>> TopWithKernelMerged(
    const std::vector<std::pair<uint64_t, uint64_t>>& heaviest_first, size_t k,
    const KernelStartOf& start_of) {
  std::vector<std::pair<uint64_t, uint64_t>> user, kernel;
  uint64_t kernel_weight = 0;
  for (const auto& e : heaviest_first) {
    if (decoders::IsKernelAddress(e.first)) {
      kernel.push_back(e);
      kernel_weight += e.second;
    } else {
      user.push_back(e);
    }
  }
  if (kernel.empty() || (user.size() >= k && k > 0 && kernel_weight < user[k - 1].second)) {
    if (user.size() > k) user.resize(k);
    return user;
  }
  // Merged in the order met, so that equal weights keep the counter's order.
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  std::unordered_map<uint64_t, size_t> at;
  for (const auto& [address, weight] : kernel) {
    const uint64_t fn = start_of(address);
    auto [it, added] = at.try_emplace(fn, merged.size());
    if (added)
      merged.emplace_back(fn, weight);
    else
      merged[it->second].second += weight;
  }
  std::vector<std::pair<uint64_t, uint64_t>> out = std::move(user);
  out.insert(out.end(), merged.begin(), merged.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > k) out.resize(k);
  return out;
}

bool KernelNodeMayWeigh(const std::vector<profiles::PcctNode>& nodes, double min_total) {
  std::unordered_map<profiles::PcctNodeId, uint64_t> kernel_children;
  for (const profiles::PcctNode& n : nodes) {
    if (!decoders::IsKernelAddress(n.frame.function)) continue;
    const uint64_t sum = kernel_children[n.parent] += n.total;
    if (sum > 0 && static_cast<double>(sum) >= min_total) return true;
  }
  return false;
}

std::vector<profiles::PcctNode> MergeKernelNodes(
    const std::vector<profiles::PcctNode>& nodes, const KernelStartOf& start_of,
    std::unordered_map<profiles::PcctNodeId, profiles::PcctNodeId>* merged_into) {
  std::vector<profiles::PcctNode> out;
  out.reserve(nodes.size());
  std::map<std::tuple<profiles::PcctNodeId, uint64_t, uint64_t>, size_t> index;
  for (const profiles::PcctNode& n : nodes) {
    profiles::PcctNode copy = n;
    if (auto p = merged_into->find(n.parent); p != merged_into->end()) copy.parent = p->second;
    if (decoders::IsKernelAddress(n.frame.function))
      copy.frame.function = start_of(n.frame.function);
    const auto key = std::make_tuple(copy.parent, copy.frame.function, copy.frame.call_site);
    if (auto it = index.find(key); it != index.end()) {
      profiles::PcctNode& kept = out[it->second];
      kept.self += n.self;
      kept.total += n.total;
      kept.edge += n.edge;
      (*merged_into)[n.id] = kept.id;
      continue;
    }
    index.emplace(key, out.size());
    (*merged_into)[n.id] = n.id;
    out.push_back(copy);
  }
  return out;
}

}  // namespace pathprof::pipeline
