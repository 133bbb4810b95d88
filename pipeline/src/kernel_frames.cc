#include "pathprof/pipeline/kernel_frames.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "pathprof/decoders/address_space.h"

namespace pathprof::pipeline {

bool IsKernelLocation(const Location& l) {
  return decoders::IsKernelAddress(l.address) || l.image == "[kernel.kallsyms]" ||
         l.function == kHiddenKernelFrame;
}

void HideKernel(Location* l) {
  if (!IsKernelLocation(*l)) return;
  *l = Location{};
  l->function = kHiddenKernelFrame;
}

void HideKernelFrames(CallingContextTree* tree) {
  // Nodes come parents first, so one pass can map each node to the node it becomes: a kernel
  // node under a kernel node becomes its parent's node (the chain collapses), and a kernel node
  // under anything else becomes the one "[kernel]" child of that parent.
  std::unordered_map<uint64_t, size_t> out_index;  // old id -> index in `out`
  std::unordered_map<uint64_t, bool> hidden;       // old id -> became a "[kernel]" node
  std::map<uint64_t, size_t> kernel_child;         // new parent id -> its "[kernel]" child
  std::vector<CctNode> out;
  for (const CctNode& n : tree->nodes) {
    const bool kernel = IsKernelLocation(n.function);
    const auto parent = out_index.find(n.parent_id);
    const bool parent_hidden = parent != out_index.end() && hidden[n.parent_id];
    const uint64_t new_parent = parent == out_index.end() ? 0 : out[parent->second].id;
    if (kernel && parent_hidden) {
      // Part of a kernel chain: its weight is already in the chain's top node's total; only
      // its self weight moves up.
      out[parent->second].self_weight += n.self_weight;
      out_index[n.id] = parent->second;
      hidden[n.id] = true;
      continue;
    }
    if (kernel) {
      if (auto k = kernel_child.find(new_parent); k != kernel_child.end()) {
        CctNode& merged = out[k->second];
        merged.self_weight += n.self_weight;
        merged.total_weight += n.total_weight;
        merged.edge_weight += n.edge_weight;
        out_index[n.id] = k->second;
        hidden[n.id] = true;
        continue;
      }
    }
    CctNode copy = n;
    copy.parent_id = new_parent;
    if (kernel) {
      HideKernel(&copy.function);
      copy.call_site = Location{};
      kernel_child[new_parent] = out.size();
    } else {
      HideKernel(&copy.call_site);
    }
    out_index[n.id] = out.size();
    hidden[n.id] = kernel;
    out.push_back(std::move(copy));
  }
  tree->nodes = std::move(out);
}

void HideKernelFrames(HotMethodsResult* methods) {
  std::vector<HotMethod> out;
  std::map<uint32_t, size_t> kernel_of_pid;
  for (HotMethod& m : methods->methods) {
    if (!IsKernelLocation(m.function)) {
      out.push_back(std::move(m));
      continue;
    }
    HideKernel(&m.function);
    auto it = kernel_of_pid.find(m.pid);
    if (it == kernel_of_pid.end()) {
      kernel_of_pid[m.pid] = out.size();
      out.push_back(std::move(m));
    } else {
      out[it->second].self.value += m.self.value;
      out[it->second].self.share += m.self.share;
      out[it->second].entries.value += m.entries.value;
    }
  }
  methods->methods = std::move(out);
}

void HideKernelFrames(HotCallPairsResult* pairs) {
  for (CallPair& p : pairs->pairs) {
    HideKernel(&p.call_site);
    HideKernel(&p.target);
  }
}

void HideKernelFrames(HotPathsResult* paths) {
  for (HotPath& p : paths->paths) {
    HideKernel(&p.start);
    for (Location& b : p.blocks) HideKernel(&b);
  }
}

void HideKernelFrames(HotSubpathsResult* subpaths) {
  for (Subpath& s : subpaths->subpaths)
    for (Location& b : s.blocks) HideKernel(&b);
}

}  // namespace pathprof::pipeline
