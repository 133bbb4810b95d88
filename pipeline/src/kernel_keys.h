// Kernel frames named lazily: a store keys a kernel frame by its own address at ingest, not by
// its function's start, so that a session whose kernel frames no report shows never reads the
// kernel's symbol table (/proc/kallsyms: its formatting and a table of 100k+ symbols were a
// fifth of a short `pathctl run`). A query merges the addresses of one function when a kernel
// entry could be in what it returns, and reads the table then; else its answer is the same
// without it. Private to pipeline/src.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/profiles/pcct.h"

namespace pathprof::pipeline {

// The start of the kernel function holding an address (SymbolService::KernelFunctionStart).
using KernelStartOf = std::function<uint64_t(uint64_t)>;

// The `k` heaviest of `heaviest_first` (function keys and their weights, every key the counter
// has), kernel addresses merged into their functions. The table is not consulted when all the
// kernel weight together is below the k-th user function's: no kernel function can rank then.
std::vector<std::pair<uint64_t, uint64_t>> TopWithKernelMerged(
    const std::vector<std::pair<uint64_t, uint64_t>>& heaviest_first, size_t k,
    const KernelStartOf& start_of);

// Whether a kernel node of `nodes` could weigh `min_total` or more once the kernel addresses
// below each parent are merged into functions: the sum of a parent's kernel children is at least
// that.
bool KernelNodeMayWeigh(const std::vector<profiles::PcctNode>& nodes, double min_total);

// `nodes` (parents before children, as Pcct::Snapshot gives them) with each kernel node's
// function made its function's start and the siblings that then share function and call site
// merged (weights added; the children of both under the one kept). `merged_into` maps every
// node id to the id it became.
std::vector<profiles::PcctNode> MergeKernelNodes(
    const std::vector<profiles::PcctNode>& nodes, const KernelStartOf& start_of,
    std::unordered_map<profiles::PcctNodeId, profiles::PcctNodeId>* merged_into);

}  // namespace pathprof::pipeline
