// Branch windows without a stop: each eBPF sample of a target carries a snapshot (registers, the
// stack's top, the bytes around what the registers point at, hint pages: SnapshotSettings), and
// a window is emulated from it later, on this process's own time, over the snapshot and the
// process's stable pages read from their files (nothing is read from the live process, nothing
// attaches to it: it works where ptrace is refused). A window is exact or shorter, never wrong:
// the emulator marks what the snapshot does not hold as unknown and ends the window where a
// branch, a jump target or an address depends on it (docs/performance.md "Snapshot windows").
//
// One worker thread hands the samples of every target in turn, from a bounded queue, to the
// emulator helper (pathprof-emulator: a process of its own, unprivileged and sandboxed, which
// the code it interprets cannot turn against this one; collectors/src/emulator_client.h); what
// it cannot keep up with is dropped and counted. Per process it keeps the stable pages it read, the
// decoded instructions, and the pages to ask the sampler to copy: read-only mappings' pages
// that are not their file's (RELRO: copied once, then kept), and, with learn_hints, the pages
// whose unknown bytes ended windows (copied with every sample, most recent first).
#pragma once

#include <sys/types.h>
#include <array>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/collectors/window_budget.h"
#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/emulator/window_emulator.h"

namespace pathprof::collectors {

struct SnapshotWindowOptions {
  std::vector<uint32_t> pids;
  int frequency_hz = 999;  // samples, so windows, per second per thread at most
  uint32_t window_taken = 32;
  uint32_t stack_copy_bytes = kDefaultStackCopyBytes;
  SnapshotSettings snapshot;  // `enabled` is set by Start
  bool follow_children = false;
  std::optional<uint32_t> only_uid;  // a confined session: only this uid's tasks
  // The file-system credentials the mapped files are opened with (a confined session's
  // requester; the emulator helper then runs as that user too); nullopt: this process's own
  // (and the helper runs as nobody when this process is root).
  std::optional<decoders::FileCredentials> open_as;
  // Emulate in this process's worker thread instead of the sandboxed helper: for benchmarks
  // that time the emulation alone. Never for code this process's user did not write.
  bool emulate_in_this_process = false;
  // Helpers started in all (a dead one is replaced at the next sample, up to this many times;
  // then the samples are counted lost_emulator_gone).
  uint32_t max_emulator_starts = 4;
  // Learn data hint pages from the windows' misses (each costs a 4 KiB copy per sample).
  bool learn_hints = false;
  size_t queue_samples = 256;  // samples waiting for the worker at most; then dropped, counted
  // Shared with other collectors (the whole host's windows, window_budget.h): a sample past it
  // is not emulated, counted (budget_count, budget_cpu). Null: no bound but the queue's.
  std::shared_ptr<WindowBudget> budget;
  // Processes kept (each has its image and its emulator's caches); past it the one whose last
  // sample is oldest is forgotten, counted (processes_evicted). pids empty (every process on
  // the host) is what reaches it.
  size_t max_processes = 1024;
  // Each process's emulator caches: stable pages (4 KiB each) and decoded instructions.
  uint32_t max_stable_pages = emulator::EmulatorLimits{}.max_stable_pages;
  uint32_t max_decoded = emulator::EmulatorLimits{}.max_decoded;
};

struct SnapshotWindowStats {
  uint64_t samples = 0;             // samples of the targets received
  uint64_t windows = 0;             // windows emulated and handed on
  uint64_t dropped_queue_full = 0;  // samples the worker could not keep up with
  uint64_t no_snapshot = 0;         // samples without a snapshot or registers
  uint64_t in_syscall = 0;          // windows started at a system call's return
  // Samples inside a call that changes the mappings (SnapshotStart::in_mapping_syscall): no
  // window.
  uint64_t in_mapping_syscall = 0;
  uint64_t execs = 0;              // processes seen to exec: what was kept of them dropped
  uint64_t budget_count = 0;       // samples past the budget's windows a second
  uint64_t budget_cpu = 0;         // ... past its CPU share
  uint64_t processes_evicted = 0;  // processes forgotten for max_processes
  uint64_t own_process = 0;  // samples of this process or its helpers (every process): no window
  uint64_t after_stop = 0;   // samples that arrived after Stop: not taken (the session ended)
  // Samples of a process whose windows come from elsewhere (SetWindowsWanted: a hybrid
  // session's process under stop-and-emulate windows): not emulated.
  uint64_t not_wanted = 0;
  // Samples waiting for the worker or being emulated when the stats were read: every sample is
  // in exactly one of windows, no_snapshot, in_mapping_syscall, dropped_queue_full,
  // budget_count, budget_cpu, own_process, after_stop, not_wanted, lost_emulator_gone and
  // queued.
  uint64_t queued = 0;
  uint64_t emulator_failures = 0;   // emulator helpers that died, hung or broke the protocol
  uint64_t lost_emulator_gone = 0;  // samples lost with one (in flight, or none left to start)
  std::string emulator_failure;     // the last one's, with how it ended
  bool emulator_exhausted = false;  // max_emulator_starts used up: no more windows
  uint64_t taken = 0;               // taken branches in all windows
  uint64_t emulate_ns = 0;          // the worker's CPU time on windows
  std::array<uint64_t, emulator::kEmulationEndCount> ends{};
  uint64_t snapshots_cut = 0;              // the sampler's byte cap left pieces out
  uint64_t snapshot_hints_unreadable = 0;  // hint pages unmapped by the sample
  uint64_t ringbuf_full = 0;               // samples lost before they reached the worker
  uint64_t image_pages_from_files = 0;
  uint64_t image_pages_written = 0;  // read-only mappings' pages that were not the file's
  uint64_t image_pages_adopted = 0;  // ... copied by a sample and kept
};

class SnapshotWindowCollector {
 public:
  using WindowSink = std::function<void(const BranchBatch&)>;
  // Subscribes to the process's eBPF sampler with snapshots and starts the worker. `on_window`
  // is called from the worker thread; `on_stack`, when set, with every sample (from the
  // sampler's reader thread), so that one subscription serves stacks and windows.
  static Result<std::unique_ptr<SnapshotWindowCollector>> Start(
      const SnapshotWindowOptions& options, WindowSink on_window,
      std::function<void(const RawStackSample&)> on_stack = {});
  ~SnapshotWindowCollector();  // stops the worker; no sink is called after it returns
  SnapshotWindowCollector(const SnapshotWindowCollector&) = delete;
  SnapshotWindowCollector& operator=(const SnapshotWindowCollector&) = delete;

  Status AddPid(uint32_t pid);
  Status RemovePid(uint32_t pid);  // and forgets what it kept of the process
  // Whether `pid`'s samples become windows (all do at first). A process whose windows another
  // source takes is not emulated (its samples counted not_wanted) and what was kept of it is
  // forgotten; in whole-host mode, where the sampler snapshots every process whatever its
  // subscribers, this is what spares the emulation. At most max_processes are unwanted at
  // once (past it the call fails); RemovePid forgets the mark.
  Status SetWindowsWanted(uint32_t pid, bool wanted);
  // Emulates what is queued now before returning (waiting 5 s at most).
  void Flush();
  // Takes no more samples (those that arrive count as after_stop), then Flush: the stats are
  // final after it.
  void Stop();
  SnapshotWindowStats stats() const;
  // The emulator helper's pid now (-1: none running, or emulate_in_this_process).
  pid_t emulator_pid() const;

  struct Impl;

 private:
  explicit SnapshotWindowCollector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::collectors
