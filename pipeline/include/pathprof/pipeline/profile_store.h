// Everything pathprof knows about one target process: its PCCT and hot methods (from stack
// samples), its path engine (Hot Path Table, window estimator), OSP subpaths and call pairs (from
// branch windows), the mappings needed to symbolize them, and its accounting.
//
// Written by one pipeline thread, read by any number of query threads at any moment: each query
// copies what it needs under the store's lock (consistent: no half-applied sample or window) and
// symbolizes after releasing it. An exited target's store stays readable until its session drops
// it after the retention period.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/branch.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/pipeline/accounting.h"
#include "pathprof/pipeline/results.h"
#include "pathprof/pipeline/session_config.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathprof::pipeline {

// How a target's branch batches arrive, which decides how its hot paths are estimated.
enum class BranchWindows : uint8_t {
  kNone = 0,       // one continuous stream (Intel PT, exact traces): Hot Path Table counts
  kTakenBranches,  // bounded windows starting uniformly over taken branches (LBR)
  // Bounded windows starting uniformly in time (ptrace bursts): weighted by the time of their
  // blocks from the cycle model (llvm-mca), or by their instructions where it is unavailable.
  kTime,
  // The same, ragged: each window ends where its source ran out (snapshot windows: the first
  // branch that depends on memory the snapshot did not hold), so its length depends on where it
  // starts. Whole paths count only within a window's first taken branches
  // (hwmodel::WindowEstimatorConfig::counted_prefix; docs/profiles.md "Ragged windows").
  kTimeRagged,
};

// Branches several stores keep for exports together (ProfileStore::ShareExportBuffer).
struct SharedExportBuffer {
  explicit SharedExportBuffer(uint64_t most) : bound(most) {}
  const uint64_t bound;
  std::atomic<uint64_t> held{0};
};

class ProfileStore {
 public:
  // With windows, hot paths come from the window estimator (docs/design.md §5).
  static Result<std::unique_ptr<ProfileStore>> Create(uint32_t pid, const SessionConfig& config,
                                                      BranchWindows windows,
                                                      std::shared_ptr<SymbolService> symbols);
  // For recordings (perf.data, .pbs) analyzed offline: the pid names a process of the recording
  // host, so /proc is never read; the mappings come from the recording (AddMapping).
  static Result<std::unique_ptr<ProfileStore>> CreateOffline(
      uint32_t pid, const SessionConfig& config, BranchWindows windows,
      std::shared_ptr<SymbolService> symbols);
  // Rebuilds what takes branch windows for another kind of windows (a session's branch source
  // fell back to one whose windows are weighted otherwise), keeping the stack side: the stack
  // samples that arrived meanwhile stay. Only before any window has been added.
  Status ResetWindows(BranchWindows windows);
  // The same for one process of a session whose source takes each process's windows from where
  // they serve it best (hybrid): rebuilt, its branch side emptied, only when `windows` differ
  // from what the store takes (the caller switches a process before the first window of the new
  // kind); `why` is said after the weighting in TargetStats::window_weighting.
  Status UseWindows(BranchWindows windows, std::string why);
  ~ProfileStore();
  ProfileStore(const ProfileStore&) = delete;
  ProfileStore& operator=(const ProfileStore&) = delete;

  uint32_t pid() const;

  // ------------------------------------------------------------ queries (any thread)
  TargetInfo Info() const;
  HotPathsResult HotPaths(const HotPathsQuery& query) const;
  HotSubpathsResult HotSubpaths(const HotSubpathsQuery& query) const;
  CallingContextTree Cct(const CctQuery& query) const;
  HotCallPairsResult HotCallPairs(uint32_t top_k) const;
  HotMethodsResult HotMethods(uint32_t top_k) const;
  TargetStats Stats() const;
  // Where the samples whose leaf was the function entered at `function_start` stood: each
  // sampled address, named, with its count (the PCCT keeps functions only). Empty when none
  // were recorded (a kernel leaf, or the table was full: counted as leaf_address_table_full).
  std::vector<std::pair<Location, uint64_t>> LeafAddresses(uint64_t function_start) const;
  // Every path the engine holds now (for baselines and residual paths).
  std::vector<PathKey> PathKeys() const;
  // The newest branch batches (config.export_branch_events at most; of those, the newest whole
  // batches of at most `max_events` branches) and the process's file mappings, as a recording:
  // what branch-profile exports of a running session write.
  PbsContents RecentBranches(uint64_t max_events = UINT64_MAX) const;
  // The branches RecentBranches holds now.
  uint64_t RecentBranchEvents() const;
  // Keeps those branches within `shared`'s bound together with the other stores given it (a
  // whole-host session's), as well as within config.export_branch_events: a store adding a
  // window while the stores together hold more lets its own oldest windows go, down to its
  // newest. So a busy process gives way and each keeps about the same span of time, its share
  // following its window rate (what BranchesForArchive takes); one that exited keeps its own.
  void ShareExportBuffer(std::shared_ptr<SharedExportBuffer> shared);
  // The ELF image of the file mapped at `at` (an ImageRecord's start), as queries find it
  // (SymbolService::MappedImage: with a confined session's requester's rights, bounded, cached).
  Result<std::shared_ptr<const decoders::ElfImage>> MappedImage(uint64_t at) const;
  // Bumped by every sample or window applied: lets a watcher skip unchanged profiles.
  uint64_t generation() const;

  // ------------------------------------------------------------ ingest (the pipeline's thread)
  // Resolves the user frames through the process's mappings (read from /proc/PID/maps on the
  // first sample and again when an address falls outside every known mapping) and the kernel
  // frames through kallsyms, then adds the stack to the PCCT and hot methods.
  void AddStackSample(const collectors::RawStackSample& sample);
  // One batch of branches of one thread (a window when batch.window) into the path engine, OSP
  // and call pairs / method entries.
  void AddBranches(const BranchBatch& batch);
  // The process is a command forked and held before its exec (pathctl run): what it runs until
  // the exec is the launcher's code (pathctl's own, its libc), not the command's, and the exec
  // replaces the image that could name it (its call pairs read as bare addresses). As perf
  // record's enable_on_exec, nothing is recorded until NoteExec: samples and windows are
  // counted as the drop "before_exec".
  void HoldUntilExec();
  // The process exec'd: mappings are re-read on its next sample; old profiles stay. A held
  // process (HoldUntilExec) starts recording; samples and windows stamped before
  // `exec_monotonic_ns` (CLOCK_MONOTONIC; 0: now), still queued then, are the launcher's too.
  void NoteExec(uint64_t exec_monotonic_ns = 0);
  // A thread ended: its PCCT thread state is dropped.
  void NoteThreadExit(uint32_t tid);
  // The process ended; the profile stays readable.
  void NoteExit();
  // Offline stores: a mapping of the recorded process (MMAP2 record, .pbs image). The vdso is
  // skipped: its bytes lived only in the recorded process.
  void AddMapping(const decoders::Mapping& mapping);
  // Offline stores: what the recording says the process was (COMM record, executable path).
  void SetIdentity(const std::string& comm, const std::string& executable);
  // Re-reads /proc/PID/maps now (e.g. when a short-lived process is first seen).
  Status RefreshMappings();

  TargetAccounting& accounting();
  const TargetAccounting& accounting() const;

 private:
  struct Impl;
  static Status BuildBranchSide(Impl* impl, const SessionConfig& config, BranchWindows windows);
  explicit ProfileStore(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<ProfileStore>> Make(uint32_t pid, const SessionConfig& config,
                                                    BranchWindows windows,
                                                    std::shared_ptr<SymbolService> symbols,
                                                    bool offline);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::pipeline
