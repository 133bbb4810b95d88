// ProfileStore: branch windows attributed to calling contexts (the stack at a window's start),
// and the contexts a query selects.
#include <cerrno>
#include <unordered_map>

#include "pathprof/core/clock.h"
#include "profile_store_impl.h"

namespace pathprof::pipeline {

std::optional<ContextKey> ProfileStore::Impl::WindowContextLocked(const BranchBatch& batch) {
  const ThreadStack& st = batch.stack;
  if (st.regs.size() == decoders::kDwarfRegisterCount) {
    if (!contexts.TakeUnwind(MonotonicNs())) {
      accounting.drops.Add("window_stack_rate_capped");
    } else {
      if (space.Find(st.regs[decoders::kDwarfRip]) == nullptr) RefreshAfterMissLocked();
      decoders::UnwindResult u = symbols->UnwindUser(pid, space, st.regs, st.stack_start, st.stack);
      CountRefusedCfi(u);
      if (u.frames.empty()) {
        accounting.decode_errors.Add("window_stack_unwind_failed");
      } else {
        ContextKey key;
        // A walk that stopped short of the thread's root names a partial context.
        key.truncated = u.end != decoders::UnwindEnd::kOutermost;
        if (key.truncated)
          accounting.decode_errors.Add("window_stack_unwind_partial:" +
                                       std::string(decoders::UnwindEndName(u.end)));
        key.frames = FramesLocked(u.frames);
        return key;
      }
    }
  } else if (st.error != 0) {
    accounting.decode_errors.Add(st.error == EBADMSG ? "window_stack_malformed"
                                                     : "window_stack_unreadable");
  } else if (!st.regs.empty()) {
    accounting.decode_errors.Add("window_stack_malformed");
  }
  if (const ContextKey* near = contexts.NearestSample(batch.tid, batch.time_ns)) return *near;
  accounting.drops.Add("window_context_none");
  return std::nullopt;
}

void ProfileStore::Impl::AttributeWindowLocked(
    const BranchBatch& batch, const std::vector<WindowContexts::Contribution>& paths) {
  std::optional<ContextKey> key = WindowContextLocked(batch);
  if (!key) return;
  const profiles::PcctNodeId node = pcct->Place(key->frames, key->truncated);
  uint64_t dropped = 0;
  if (contexts.Add(*key, node, paths, &dropped) == WindowContexts::AddResult::kTableFull) {
    accounting.drops.Add("window_context_table_full");
    return;
  }
  if (dropped) accounting.drops.Add("context_path_table_full", dropped);
  ++windows_with_context;
}

profiles::PcctNodeId ProfileStore::Impl::LiveNodeLocked(const ContextKey& key,
                                                        profiles::PcctNodeId cached) const {
  std::vector<profiles::StackFrame> root_first(key.frames.rbegin(), key.frames.rend());
  if (cached != profiles::kPcctNoNode && pcct->Context(cached) == root_first &&
      pcct->UnderTruncatedRoot(cached) == key.truncated)
    return cached;
  auto found = pcct->Find(root_first,
                          key.truncated ? profiles::Pcct::kTruncatedRoot : profiles::Pcct::kRoot);
  return found ? found->id : profiles::kPcctNoNode;
}

std::vector<ContextKey> ProfileStore::Impl::SelectContexts(const ContextSelector& sel) const {
  std::vector<ContextKey> keys;
  decoders::AddressSpace sp;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (sel.node != 0) {
      if (sel.node >= profiles::kPcctNoNode) return keys;
      const auto id = static_cast<profiles::PcctNodeId>(sel.node);
      const std::vector<profiles::StackFrame> root_first = pcct->Context(id);
      if (root_first.empty()) return keys;
      const bool truncated = pcct->UnderTruncatedRoot(id);
      const size_t n = root_first.size();
      contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context&) {
        if (k.truncated != truncated || k.frames.size() < n) return;
        // k's outermost n frames (the end of its leaf-first list) are the node's context.
        for (size_t i = 0; i < n; ++i)
          if (k.frames[k.frames.size() - 1 - i] != root_first[i]) return;
        keys.push_back(k);
      });
      return keys;
    }
    contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context&) {
      if (!sel.functions.empty() && k.frames.size() >= sel.functions.size()) keys.push_back(k);
    });
    sp = space;
  }
  std::unordered_map<uint64_t, std::string> names;
  auto name_of = [&](uint64_t fn) -> const std::string& {
    auto it = names.find(fn);
    if (it == names.end()) it = names.emplace(fn, symbols->Symbolize(pid, sp, fn).function).first;
    return it->second;
  };
  const size_t m = sel.functions.size();
  std::erase_if(keys, [&](const ContextKey& k) {
    for (size_t j = 0; j < m; ++j)
      if (name_of(k.frames[m - 1 - j].function) != sel.functions[j]) return true;
    return false;
  });
  return keys;
}

std::vector<ProfileStore::Impl::PathInContext> ProfileStore::Impl::ContextsOfLocked(
    const hwmodel::PathDescriptor& path) const {
  std::vector<PathInContext> out;
  contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context& c) {
    auto it = c.paths.find(path);
    if (it != c.paths.end()) out.push_back({k, c.node, it->second});
  });
  return out;
}

}  // namespace pathprof::pipeline
