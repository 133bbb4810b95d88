// ProfileStore: applying what the collectors send, on the pipeline's thread: stack samples
// (PCCT, hot methods, leaf addresses) and branch batches (path engine, OSP, call pairs, the
// newest windows kept for exports).
#include "profile_store_impl.h"

namespace pathprof::pipeline {
namespace {

constexpr size_t kMaxRepresentatives = 1 << 16;            // paths whose blocks are remembered
constexpr size_t kMaxLeafAddresses = kLeafAddressEntries;  // in SessionConfig's memory bound

}  // namespace

bool ProfileStore::Impl::BeforeExecLocked(uint64_t time_ns) {
  if (!held_until_exec && (exec_ns == 0 || time_ns == 0 || time_ns >= exec_ns)) return false;
  accounting.drops.Add("before_exec");
  return true;
}

void ProfileStore::Impl::KeepRecentLocked(const BranchBatch& batch) {
  if (config.export_branch_events == 0) return;
  // Without the window's stack (a snapshot's or a stopped thread's top of stack, up to the
  // stack copy: kilobytes a window against ~1 KiB of branches), which is not copied at all: it
  // named the window's calling context when the batch was applied, and the exports (perf-lbr,
  // BOLT, the archive's .pbs) read the branches only.
  recent.push_back(BranchBatch{batch.pid, batch.tid, batch.time_ns, batch.gap_before, batch.window,
                               batch.events, ThreadStack{}});
  recent_events += batch.events.size();
  if (export_shared) export_shared->held += batch.events.size();
  const auto over = [this] {
    return recent_events > config.export_branch_events ||
           (export_shared && export_shared->held.load() > export_shared->bound);
  };
  while (over() && recent.size() > 1) {
    const size_t n = recent.front().events.size();
    recent_events -= n;
    if (export_shared) export_shared->held -= n;
    recent.pop_front();
    ++recent_let_go;
  }
}

void ProfileStore::Impl::RecordPath(const hwmodel::CompletedPath& c,
                                    std::span<const BranchEvent> events, size_t i) {
  if (hpt) hpt->Record(c);
  if (representatives.size() >= kMaxRepresentatives || representatives.contains(c.path)) return;
  // The path's branches are the `length` events ending at i when nothing (a call) interleaved;
  // check that the first of them lies just after the path's start, else keep the start only.
  std::vector<uint64_t> blocks{c.path.start};
  const size_t len = c.path.length;
  if (len >= 1 && len <= i + 1) {
    const size_t first = i + 1 - len;
    const BranchEvent& f = events[first];
    if (f.from >= c.path.start && f.from - c.path.start < 4096) {
      for (size_t j = first; j < i; ++j) blocks.push_back(events[j].to);
    }
  }
  representatives.emplace(c.path, std::move(blocks));
}

void ProfileStore::AddStackSample(const collectors::RawStackSample& sample) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.BeforeExecLocked(sample.time_ns)) return;
    if (sample.user.empty() && sample.kernel.empty()) {
      s.accounting.drops.Add(sample.user_error ? "stack_unreadable" : "empty_stack");
    } else {
      if (sample.user_error != 0) s.accounting.decode_errors.Add("user_stack_error");
      if (s.maps_stale || !s.maps_read) (void)s.RefreshLocked();
      // The user stack: the kernel's frame-pointer walk, or with a copied stack, the DWARF CFI
      // walk (programs built without frame pointers), unless frame pointers reached further.
      std::vector<uint64_t> user = s.UserFramesLocked(sample);
      for (uint64_t a : user) {
        if (s.space.Find(a) != nullptr) continue;
        s.RefreshAfterMissLocked();
        break;
      }
      profiles::StackSample st;
      st.pid = s.pid;
      st.tid = sample.tid;
      st.weight = 1;
      // Leaf first: kernel frames (if any) above the user stack. A frame's call site is the
      // caller's address, which is the next frame's return address.
      std::vector<uint64_t> addrs;
      addrs.reserve(sample.kernel.size() + user.size());
      addrs.insert(addrs.end(), sample.kernel.begin(), sample.kernel.end());
      addrs.insert(addrs.end(), user.begin(), user.end());
      st.frames.reserve(addrs.size());
      for (size_t i = 0; i < addrs.size(); ++i) {
        profiles::StackFrame f;
        f.function = s.FunctionOfLocked(addrs[i]);
        f.call_site = i + 1 < addrs.size() ? addrs[i + 1] : 0;
        st.frames.push_back(f);
      }
      if (Status add = s.pcct->Add(st); !add.ok()) {
        s.accounting.drops.Add("pcct_rejected");
      } else {
        if (!user.empty() && sample.kernel.empty()) {
          auto& at = s.leaf_addresses[st.frames.front().function];
          auto [it, added] = at.try_emplace(user.front(), 0);
          if (added && s.leaf_address_entries >= kMaxLeafAddresses) {
            at.erase(it);
            s.accounting.drops.Add("leaf_address_table_full");
          } else {
            s.leaf_address_entries += added;
            ++it->second;
          }
        }
        // The user part of the stack names the windows of this thread near it in time.
        if (!user.empty()) {
          ContextKey key;
          key.frames.assign(st.frames.begin() + static_cast<long>(sample.kernel.size()),
                            st.frames.end());
          s.contexts.NoteSample(sample.tid, sample.time_ns, key);
        }
        (void)s.methods_from_stacks.AddStackSample(st);
        s.accounting.stack_samples.fetch_add(1, std::memory_order_relaxed);
      }
      // The process's name is its main thread's, as of its latest sample: a child forked by a
      // shell is named `sh` until it execs (other threads may have names of their own).
      if (s.info.comm.empty() || sample.tid == s.pid) s.info.comm = sample.comm;
    }
  }
  s.generation.fetch_add(1, std::memory_order_relaxed);
}

void ProfileStore::AddBranches(const BranchBatch& batch) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.BeforeExecLocked(batch.time_ns)) return;
  }
  std::vector<double> durations;
  if (s.cycles && batch.window && !batch.events.empty()) {
    std::lock_guard<std::mutex> cycle_lock(s.cycle_mu);
    // The model decodes each span before asking for the next: holding the last image will do.
    std::shared_ptr<const decoders::ElfImage> owner;
    durations = s.cycles->WindowDurations(batch.events, [&](uint64_t address) {
      std::lock_guard<std::mutex> lock(s.mu);
      SymbolService::Code code = s.symbols->CodeAt(s.pid, s.space, address);
      owner = std::move(code.owner);
      return code.bytes;
    });
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.accounting.windows.fetch_add(1, std::memory_order_relaxed);
    s.accounting.branches.fetch_add(batch.events.size(), std::memory_order_relaxed);
    if (batch.events.empty()) {
      s.accounting.drops.Add("empty_window");
    } else {
      if (s.estimator && batch.window) {
        const hwmodel::WindowEstimatorStats before = s.estimator->stats();
        std::vector<WindowContexts::Contribution> paths;
        s.estimator->AddWindow(batch.events, durations,
                               [&](const hwmodel::PathDescriptor& p, double value, uint64_t n) {
                                 paths.push_back({p, value, n});
                               });
        // Fewer than two taken branches, or no block length known: no density to weight by.
        const hwmodel::WindowEstimatorStats& after = s.estimator->stats();
        if (after.windows_without_density > before.windows_without_density)
          s.accounting.drops.Add("window_without_density");
        // Ragged windows: whole paths past the counted prefix, seen but left out by design.
        if (after.beyond_prefix > before.beyond_prefix)
          s.accounting.drops.Add("window_path_beyond_counted_prefix",
                                 after.beyond_prefix - before.beyond_prefix);
        s.AttributeWindowLocked(batch, paths);
      }
      s.KeepRecentLocked(batch);
      auto it = s.stacks.find(batch.tid);
      if (it == s.stacks.end()) it = s.stacks.emplace(batch.tid, *s.stack_proto).first;
      hwmodel::PathStack& stack = it->second;
      if (batch.gap_before || batch.window) stack.Reset();
      const std::span<const BranchEvent> events(batch.events);
      for (size_t i = 0; i < events.size(); ++i) {
        stack.Process(events[i],
                      [&](const hwmodel::CompletedPath& c) { s.RecordPath(c, events, i); });
      }
      // A window ends mid-path: its open paths are partial and must not leak into the next.
      if (batch.window) stack.Reset();

      auto sit = s.osp_samplers.find(batch.tid);
      if (sit == s.osp_samplers.end()) {
        sit = s.osp_samplers
                  .emplace(batch.tid,
                           std::make_unique<profiles::OspThreadSampler>(s.osp.get(), batch.tid))
                  .first;
      }
      sit->second->Feed(batch);
      if (batch.window) sit->second->Gap();
      sit->second->Flush();
      s.call_pairs.AddBatch(batch);
      s.methods_from_branches.AddBatch(batch);
    }
  }
  s.generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pathprof::pipeline
