// ProfileStore's state and the helpers its parts share, private to pipeline/src. The store is
// one class written in several files, one job each: profile_store.cc (making a store, its
// lifecycle, stats), profile_store_mappings.cc (the process's mappings and symbols),
// profile_store_contexts.cc (windows attributed to calling contexts), profile_store_ingest.cc
// (applying stack samples and branch windows), profile_store_paths.cc (hot paths and subpaths)
// and profile_store_stack_queries.cc (the PCCT, call pairs, hot methods, leaf addresses).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/profiles/hps_profiles.h"
#include "pathprof/profiles/osp_reservoir.h"
#include "pathprof/profiles/osp_sampler.h"
#include "pathprof/profiles/pcct.h"
#include "window_contexts.h"

namespace pathprof::pipeline {

// Distinct kernel addresses a store keeps as keys before it reads the kernel's table: a target
// that spends its time in the kernel has its kernel frames named anyway, and its tree keyed by
// function, not by every sampled address.
inline constexpr size_t kMaxKernelAddressKeys = 1024;

// The confidence of the intervals the window estimator reports (window_estimator.h).
inline constexpr double kConfidence95 = 0.95;

struct ProfileStore::Impl {
  uint32_t pid = 0;
  SessionConfig config;
  BranchWindows windows = BranchWindows::kNone;
  std::string window_weighting;  // how the estimator weights windows, and why
  std::string windows_note;      // where this process's windows come from, and why (UseWindows)
  // kTime: block cycles of each window, outside `mu` (the model's code reader takes it).
  std::mutex cycle_mu;
  std::unique_ptr<decoders::CycleModel> cycles;
  bool offline = false;  // a recording: never read /proc
  std::shared_ptr<SymbolService> symbols;

  mutable std::mutex mu;
  TargetAccounting accounting;
  std::atomic<uint64_t> generation{0};

  // Mappings: kept after the process exits so its results still symbolize.
  decoders::AddressSpace space;
  bool maps_read = false;
  bool maps_stale = false;
  bool exec_pending = false;  // the next read of the maps replaces the space (NoteExec)
  // HoldUntilExec: nothing is recorded until NoteExec, nor what is stamped before exec_ns.
  bool held_until_exec = false;
  uint64_t exec_ns = 0;
  // A confined session's files are opened with its requester's rights (mapped_file.h).
  std::optional<decoders::FileCredentials> open_as;
  std::chrono::steady_clock::time_point last_miss_refresh{};
  std::unordered_map<uint64_t, uint64_t> function_of;  // runtime address -> function start
  // Kernel frames keyed by their own addresses while the kernel's table is unread (at most
  // kMaxKernelAddressKeys of them; then the table is read): queries merge them into functions
  // when one may show (kernel_keys.h).
  std::unordered_set<uint64_t> kernel_address_keys;
  // Leaf function start -> sampled leaf address -> samples, for per-line pprof locations.
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, uint64_t>> leaf_addresses;
  size_t leaf_address_entries = 0;
  TargetInfo info;

  std::unique_ptr<profiles::Pcct> pcct;
  profiles::HotMethods methods_from_stacks;
  profiles::HotMethods methods_from_branches;
  profiles::HotCallPairs call_pairs;

  std::optional<hwmodel::PathStack> stack_proto;  // copied per thread
  std::unordered_map<uint32_t, hwmodel::PathStack> stacks;
  std::optional<hwmodel::HotPathTable> hpt;
  std::optional<hwmodel::WindowEstimator> estimator;
  // First block sequence seen for each path, for reports (the descriptor alone names only the
  // start and the outcomes).
  std::unordered_map<hwmodel::PathDescriptor, std::vector<uint64_t>, hwmodel::PathDescriptorHash>
      representatives;

  // Hot paths per calling context: windows attributed to the stack at their start.
  WindowContexts contexts;
  uint64_t windows_with_context = 0;

  std::unique_ptr<profiles::OspReservoir> osp;
  std::unordered_map<uint32_t, std::unique_ptr<profiles::OspThreadSampler>> osp_samplers;

  // The newest batches, for branch-profile exports (bounded by config.export_branch_events,
  // and with other stores by a shared bound when the session gives one: ShareExportBuffer).
  std::deque<BranchBatch> recent;
  std::shared_ptr<SharedExportBuffer> export_shared;
  size_t recent_events = 0;
  // Older batches let go to keep that bound: retention, not a loss (TargetStats says which).
  uint64_t recent_let_go = 0;

  // ------------------------------------------------ ingest (profile_store_ingest.cc)
  // True (and counted) for a sample or window of a held process's launcher code.
  bool BeforeExecLocked(uint64_t time_ns);
  void KeepRecentLocked(const BranchBatch& batch);
  void RecordPath(const hwmodel::CompletedPath& c, std::span<const BranchEvent> events, size_t i);

  // ------------------------------------------------ mappings (profile_store_mappings.cc)
  // Reads /proc/PID/maps and merges it into `space` (mappings of an earlier image stay where
  // nothing replaced them, so older samples still resolve). After an exec the new map replaces
  // the old one: the old image is gone, and an exec loop would otherwise pile up mappings.
  Status RefreshLocked();
  uint64_t FunctionOfLocked(uint64_t address);
  // An address outside every known mapping: new code was mapped (dlopen, JIT) or the process
  // exec'd; re-read the maps, at most once per kMissRefreshInterval.
  void RefreshAfterMissLocked();
  // An image whose .eh_frame failed the unwinder's checks (hostile or malformed CFI) is unwound
  // by frame pointers; counted once per image, when an unwind first meets it.
  void CountRefusedCfi(const decoders::UnwindResult& u);
  std::vector<uint64_t> UserFramesLocked(const collectors::RawStackSample& sample);
  // PCCT frames (leaf first) of user addresses (leaf first): each frame's function, called from
  // the next frame's return address.
  std::vector<profiles::StackFrame> FramesLocked(const std::vector<uint64_t>& addrs);
  std::vector<Location> SymbolizeAll(const decoders::AddressSpace& s,
                                     const std::vector<uint64_t>& addresses) const;
  decoders::AddressSpace SpaceCopy() const;

  // ------------------------------------------------ contexts (profile_store_contexts.cc)
  // The calling context of a window: its own stack unwound, else the thread's nearest stack
  // sample, else none (counted). Every failure on the way is counted by reason.
  std::optional<ContextKey> WindowContextLocked(const BranchBatch& batch);
  void AttributeWindowLocked(const BranchBatch& batch,
                             const std::vector<WindowContexts::Contribution>& paths);
  // The context's PCCT node now: the one last placed if it still holds this context (eviction
  // frees and reuses ids), else found again; kPcctNoNode when the PCCT evicted it.
  profiles::PcctNodeId LiveNodeLocked(const ContextKey& key, profiles::PcctNodeId cached) const;
  // The contexts a selector picks: a node and every context below it, or the contexts whose
  // innermost frames are the given functions. Names are resolved outside the store's lock.
  std::vector<ContextKey> SelectContexts(const ContextSelector& sel) const;
  // Every context whose windows held `path`: its key, its node as last placed, the path's tally.
  struct PathInContext {
    ContextKey key;
    profiles::PcctNodeId node;
    WindowContexts::PathTally tally;
  };
  std::vector<PathInContext> ContextsOfLocked(const hwmodel::PathDescriptor& path) const;
};

}  // namespace pathprof::pipeline
