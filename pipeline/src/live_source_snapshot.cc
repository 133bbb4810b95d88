// The snapshot-windows source: branch windows emulated from the eBPF sampler's snapshots
// (collectors/snapshot_windows.h). Nothing stops or attaches to the targets, so it runs where
// ptrace is refused (a process another tool traces, kernel.yama.ptrace_scope=3).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "live_source_snapshot.h"

#include "pathprof/emulator/window_emulator.h"
#include "process_tree.h"

namespace pathprof::pipeline {
namespace {

// Windows per second per thread when the session does not say (SamplingSettings::
// bursts_per_second): the rate issue 39 asks of this source, at about 15 us of the sampler's
// time per sample on a KVM guest (docs/performance.md).
constexpr int kDefaultSnapshotHz = 999;
// Each process's emulator caches in whole-host mode (1 MiB of pages, 8k instructions): bounded
// so that a few hundred processes fit the daemon's memory.
constexpr uint32_t kEveryProcessStablePages = 256;
constexpr uint32_t kEveryProcessDecoded = 8192;

}  // namespace

Status SnapshotSource::Start(const SourceTargets& targets, SourceSink& sink) {
  const SessionConfig& config = targets.config;
  collectors::SnapshotWindowOptions opt;
  opt.pids = config.pids;
  opt.frequency_hz = config.sampling.bursts_per_second > 0
                         ? static_cast<int>(std::lround(config.sampling.bursts_per_second))
                         : kDefaultSnapshotHz;
  opt.window_taken = config.sampling.window_branches;
  opt.follow_children = config.follow_children;
  opt.budget = config.window_budget;
  if (config.every_process) {
    // Every process on the host: as many processes kept as the session keeps stores, and
    // smaller caches each (a process's hot code is rarely more than a few hundred pages).
    opt.max_processes = std::max<size_t>(1, config.max_descendants);
    opt.max_stable_pages = kEveryProcessStablePages;
    opt.max_decoded = kEveryProcessDecoded;
  }
  opt.only_uid = config.confine_to_uid;
  if (config.confine_to_uid) {
    // The mapped files are opened as the requester: never a file they could not read.
    auto it = targets.run_as.find(config.pids.empty() ? 0 : config.pids.front());
    if (it != targets.run_as.end())
      opt.open_as = decoders::FileCredentials{it->second.uid, it->second.gid};
    else
      opt.open_as = decoders::FileCredentials{*config.confine_to_uid, *config.confine_to_uid};
  }
  auto started = collectors::SnapshotWindowCollector::Start(
      opt, [&sink](const BranchBatch& b) { sink.OfferBranches(b); });
  if (!started.ok())
    return Status(started.status().code(),
                  "snapshot windows unavailable: " + started.status().message());
  collector_ = std::move(*started);
  if (config.follow_children)
    for (uint32_t pid : Descendants(config.pids)) (void)collector_->AddPid(pid);
  detail_ = "windows emulated from eBPF snapshots at " + std::to_string(opt.frequency_hz) +
            " Hz (no stop, no ptrace)";
  return Status::Ok();
}

SourceCounters SnapshotSource::Counters() const {
  if (!collector_) return {};
  const collectors::SnapshotWindowStats st = collector_->stats();
  SourceLosses losses;
  losses.drops["snapshot_queue_full"] = st.dropped_queue_full;
  losses.drops["snapshot_ringbuf_full"] = st.ringbuf_full;
  losses.drops["snapshot_missing"] = st.no_snapshot;
  losses.drops["snapshot_cut"] = st.snapshots_cut;
  losses.drops["snapshot_in_mapping_syscall"] = st.in_mapping_syscall;
  losses.drops["snapshot_budget_count"] = st.budget_count;
  losses.drops["snapshot_budget_cpu"] = st.budget_cpu;
  // In flight when the emulator helper died or hung (then started again), or after the last
  // one the collector may start.
  losses.drops["snapshot_emulator_gone"] = st.lost_emulator_gone;
  // What was kept of a process (its image, its decodes) forgotten for a newer one: not a
  // sample lost, but its next windows start cold.
  losses.held_back["snapshot_process_evicted"] = st.processes_evicted;
  // Samples the sampler delivered after the session began to stop: not taken.
  losses.held_back["snapshot_after_stop"] = st.after_stop;
  // Samples of a process whose windows come from stops (hybrid): not emulated.
  losses.held_back["snapshot_not_wanted"] = st.not_wanted;
  // Windows that ended before W taken branches, by why: each is exact up to there, and the
  // reasons say where the snapshot fell short (held back: not a loss, what bounds the data).
  for (int e = 1; e < emulator::kEmulationEndCount; ++e)
    if (const uint64_t n = st.ends[static_cast<size_t>(e)]; n != 0)
      losses.held_back["snapshot_window_ended_" + std::string(emulator::EmulationEndName(
                                                      static_cast<emulator::EmulationEnd>(e)))] = n;
  return {{kSessionLosses, std::move(losses)}};
}

// The emulator helper died or hung as often as the collector starts one: no more windows.
std::string SnapshotSource::Failure() const {
  if (!collector_) return "";
  const collectors::SnapshotWindowStats st = collector_->stats();
  if (!st.emulator_exhausted) return "";
  return "snapshot windows' emulator helper ended " + std::to_string(st.emulator_failures) +
         " times; the last: " + st.emulator_failure;
}

void SnapshotSource::ProcessGone(uint32_t pid) {
  if (collector_) (void)collector_->RemovePid(pid);
}

void SnapshotSource::Stop() {
  if (collector_) collector_->Stop();
}

std::unique_ptr<LiveSource> MakeSnapshotSource() {
  return std::make_unique<SnapshotSource>();
}

}  // namespace pathprof::pipeline
