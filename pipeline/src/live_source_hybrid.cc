// The hybrid source: snapshot windows (no stop) for every process whose snapshots hold enough to
// cover its paths, stop-and-emulate windows (ptrace bursts, under the stopped-time cap) for the
// processes whose snapshot windows end too early: code whose branches test memory no snapshot
// holds (a compressor's match loops) is seen whole only by windows that read the live memory.
//
// Each process is judged once, on its first snapshot windows (the probe): they are held back
// until the verdict, so that the process's store weights every window it gets as the source
// that took it (ragged snapshot windows, or whole stopped ones: BranchWindows). A process whose
// probe windows hold, on average, fewer than half of W taken branches gets a tracer, and its
// probe windows are replaced by the tracer's (counted); the others keep their snapshot windows.
// Only the probe's newer half is measured: a process's first windows end early while the
// collector learns the pages its code touches (hint pages, asked for once a window has missed
// them): on the hot-loop example the first 1-26 windows held 0-2 taken branches, every later
// one 32 (six runs, docs/performance.md "Hybrid windows").
// The verdict, with its figures, ends the process's window_weighting in the stats; the windows
// each process got from each source are its windows_by_source.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "burst_tracer.h"
#include "live_source_snapshot.h"
#include "pathprof/pipeline/live_source.h"
#include "process_tree.h"

namespace pathprof::pipeline {
namespace {

// The probe: a process's first snapshot windows, up to this many, or what came in its first
// kProbeTime (at least kProbeMinWindows of them; a process sampled less rarely runs enough to
// be worth a stop, and keeps its snapshot windows).
constexpr size_t kProbeWindows = 64;
constexpr size_t kProbeMinWindows = 16;
constexpr std::chrono::seconds kProbeTime{2};
// Windows held back by every probe together at most (about 25 bytes a branch): a probe that
// would pass it is judged on what it holds.
constexpr size_t kMaxHeldWindows = 8192;
// Processes judged at most: a newcomer past it keeps its snapshot windows unprobed (counted).
constexpr size_t kMaxProcesses = 4096;
// Whole-host sessions (every process): at most this many processes traced at once, and started
// in a session's life, each at the config's hybrid_stop_hz: stops on a whole host stay the
// exception.
constexpr size_t kEveryProcessMaxTraced = 4;
constexpr size_t kEveryProcessMaxTracersStarted = 64;

class HybridSource final : public LiveSource, private SourceSink {
 public:
  Status Start(const SourceTargets& targets, SourceSink& sink) override {
    sink_ = &sink;
    targets_.emplace(targets);
    window_taken_ = std::max(1u, targets.config.sampling.window_branches);
    every_process_ = targets.config.every_process;
    max_traced_ = every_process_ ? kEveryProcessMaxTraced : targets.config.pids.size();
    PATHPROF_RETURN_IF_ERROR(snapshot_.Start(targets, *this));
    detail_ =
        snapshot_.Detail() + "; hybrid: a process whose first " + std::to_string(kProbeWindows) +
        " snapshot windows' newest half hold under " + std::to_string(Threshold()) +
        " taken branches on average (half of W) gets stop-and-emulate windows instead" +
        (every_process_ ? " (at most " + std::to_string(kEveryProcessMaxTraced) +
                              " processes at once, " + Rate(targets.config.hybrid_stop_hz) + ")"
                        : "");
    return Status::Ok();
  }

  std::string Detail() const override { return detail_; }

  // Tracers start here, on the session's poll thread, not on the snapshot worker that judged
  // the process (an attach takes milliseconds the other processes' windows would wait).
  bool NeedsPolling() const override { return true; }
  void Poll() override {
    std::vector<uint32_t> starting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      starting.swap(to_trace_);
    }
    for (uint32_t pid : starting) StartTracer(pid);
    CheckTracers();
  }

  SourceCounters Counters() const override {
    SourceCounters out = snapshot_.Counters();
    {
      std::lock_guard<std::mutex> lock(tracers_mu_);
      for (const auto& [pid, tracer] : tracers_)
        Merge(BurstLosses(tracer.final ? *tracer.final : tracer.collector->stats()), out[pid]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [pid, p] : processes_) {
      SourceLosses& l = out[pid];
      l.windows_by_source["snapshot"] = p.snapshot_windows;
      l.windows_by_source["stopped"] = p.stopped_windows;
      // Not losses: the probe's windows, replaced by stopped ones; snapshot windows that were
      // on their way when the tracer took over.
      l.held_back["hybrid_probe_replaced"] = p.probe_replaced;
      l.held_back["hybrid_snapshot_after_stops"] = p.snapshot_after_stops;
      l.drops["hybrid_tracer_ended"] = p.tracer_ended;
    }
    SourceLosses& session = out[kSessionLosses];
    session.windows_by_source["snapshot"] += unprobed_windows_;
    // Processes whose snapshot windows fell short that got no tracer: the bound on traced
    // processes, or an attach that failed (the process then keeps its snapshot windows), or a
    // process the session does not take (a whole-host series' outsider: never stopped).
    session.held_back["hybrid_stops_over_limit"] = stops_over_limit_;
    session.held_back["hybrid_stops_refused"] = stops_refused_;
    session.held_back["hybrid_stops_not_in_session"] = stops_not_taken_;
    session.held_back["hybrid_not_probed"] = not_probed_;
    return out;
  }

  std::string Failure() const override { return snapshot_.Failure(); }

  void ProcessGone(uint32_t pid) override {
    snapshot_.ProcessGone(pid);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = processes_.find(pid);
      if (it != processes_.end()) {
        TakeHeldLocked(it->second);  // its windows went with it: nothing to weigh them against
      }
    }
    std::lock_guard<std::mutex> lock(tracers_mu_);
    auto it = tracers_.find(pid);
    if (it != tracers_.end() && !it->second.final) {
      it->second.final = it->second.collector->Stop();
      --traced_now_;
    }
  }

  void RequestStop() override {
    snapshot_.RequestStop();
    std::lock_guard<std::mutex> lock(tracers_mu_);
    for (auto& [pid, tracer] : tracers_)
      if (!tracer.final) tracer.collector->RequestStop();
  }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(tracers_mu_);
      for (auto& [pid, tracer] : tracers_)
        if (!tracer.final) tracer.final = tracer.collector->Stop();
    }
    snapshot_.Stop();
    // Probes the session's end cut short: their windows are snapshot windows, as taken.
    std::map<uint32_t, std::vector<BranchBatch>> undecided;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [pid, p] : processes_) {
        // Probing, or judged for stops whose tracer never started.
        if (p.verdict == Verdict::kStopped || p.held.empty()) continue;
        p.verdict = Verdict::kSnapshot;
        p.snapshot_windows += p.held.size();
        undecided[pid] = TakeHeldLocked(p);
      }
    }
    for (auto& [pid, windows] : undecided) {
      sink_->WindowsFrom(pid, BranchWindows::kTimeRagged,
                         "snapshot windows (the session ended while " +
                             std::to_string(windows.size()) + " were being judged)");
      for (const BranchBatch& b : windows) sink_->OfferBranches(b);
    }
  }

 private:
  enum class Verdict : uint8_t { kProbing, kSnapshot, kStopping, kStopped };
  struct Process {
    Verdict verdict = Verdict::kProbing;
    std::chrono::steady_clock::time_point first;
    std::vector<BranchBatch> held;  // the probe's windows, until the verdict
    std::string why;  // the verdict's figures (kStopping: said once the tracer starts)
    uint64_t snapshot_windows = 0;
    uint64_t stopped_windows = 0;
    uint64_t probe_replaced = 0;
    uint64_t snapshot_after_stops = 0;
    uint64_t tracer_ended = 0;  // its tracer ended without a clean detach while it lived
  };
  struct Tracer {
    std::unique_ptr<stepping::PtraceBurstCollector> collector;
    std::optional<stepping::PtraceBurstStats> final;
  };

  uint32_t Threshold() const { return (window_taken_ + 1) / 2; }
  // The probe's windows `p` holds, taken out (their memory with them) and off the count of
  // held windows (under mu_).
  std::vector<BranchBatch> TakeHeldLocked(Process& p) {
    held_windows_ -= p.held.size();
    return std::exchange(p.held, {});
  }
  static std::string Rate(double hz) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.0f windows/s each", hz);
    return buf;
  }
  static void Merge(const SourceLosses& from, SourceLosses& into) {
    for (const auto& [k, v] : from.drops) into.drops[k] += v;
    for (const auto& [k, v] : from.decode_errors) into.decode_errors[k] += v;
    for (const auto& [k, v] : from.held_back) into.held_back[k] += v;
    for (const auto& [k, v] : from.windows_by_source) into.windows_by_source[k] += v;
  }
  bool MayStop(uint32_t pid) const {
    if (every_process_) return true;
    const auto& pids = targets_->config.pids;
    // A followed child's store takes stacks alone: its windows are the snapshot source's.
    return std::find(pids.begin(), pids.end(), pid) != pids.end();
  }

  // ------------------------------------------------ SourceSink: the snapshot source's windows
  void OfferBranches(const BranchBatch& b) override {
    if (!b.window) return sink_->OfferBranches(b);
    std::vector<BranchBatch> release;
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = processes_.find(b.pid);
      if (it == processes_.end() && processes_.size() >= kMaxProcesses) {
        ++not_probed_;
        ++unprobed_windows_;
      } else {
        if (it == processes_.end()) {
          it = processes_.emplace(b.pid, Process{}).first;
          it->second.first = std::chrono::steady_clock::now();
        }
        Process& p = it->second;
        switch (p.verdict) {
          case Verdict::kSnapshot:
            ++p.snapshot_windows;
            break;
          case Verdict::kStopping:
          case Verdict::kStopped:
            ++p.snapshot_after_stops;
            return;
          case Verdict::kProbing: {
            p.held.push_back(b);
            ++held_windows_;
            const bool full = p.held.size() >= kProbeWindows;
            const bool late = std::chrono::steady_clock::now() - p.first >= kProbeTime;
            if (!full && !late && held_windows_ < kMaxHeldWindows) return;
            why = Judge(b.pid, p);
            if (p.verdict == Verdict::kStopping) return;
            release = TakeHeldLocked(p);
            p.snapshot_windows += release.size();
            break;
          }
        }
      }
    }
    // The windows of one process come from one worker thread, so they stay in order here.
    if (release.empty()) return sink_->OfferBranches(b);
    sink_->WindowsFrom(b.pid, BranchWindows::kTimeRagged, why);
    for (const BranchBatch& w : release) sink_->OfferBranches(w);
  }
  void OfferStack(const collectors::RawStackSample& sample) override { sink_->OfferStack(sample); }
  void NoteExec(uint32_t pid) override { sink_->NoteExec(pid); }

  // The probe's verdict on `p` (under mu_): kSnapshot, or kStopping with the process queued for
  // a tracer. Returns the reason said with snapshot windows.
  std::string Judge(uint32_t pid, Process& p) {
    // W counts taken branches; a window's events hold its not-taken ones too.
    const size_t measured = p.held.size() - p.held.size() / 2;
    uint64_t taken = 0;
    for (size_t i = p.held.size() - measured; i < p.held.size(); ++i)
      for (const BranchEvent& e : p.held[i].events) taken += e.taken;
    const double mean = measured == 0 ? 0 : double(taken) / double(measured);
    char figures[200];
    std::snprintf(figures, sizeof figures,
                  "the newest %zu of its first %zu snapshot windows held %.1f taken branches on "
                  "average (W = %u)",
                  measured, p.held.size(), mean, window_taken_);
    const bool short_windows = p.held.size() >= kProbeMinWindows && mean < Threshold();
    if (!short_windows || !MayStop(pid)) {
      p.verdict = Verdict::kSnapshot;
      return "snapshot windows: " + std::string(figures);
    }
    if (traced_now_.load() + starting_ >= max_traced_ ||
        (every_process_ && tracers_started_ >= kEveryProcessMaxTracersStarted)) {
      ++stops_over_limit_;
      p.verdict = Verdict::kSnapshot;
      return "snapshot windows: " + std::string(figures) + ", too few for them, but " +
             std::to_string(max_traced_) + " processes are traced already";
    }
    p.verdict = Verdict::kStopping;
    p.why = "stop-and-emulate windows: " + std::string(figures) + ", under " +
            std::to_string(Threshold());
    to_trace_.push_back(pid);
    ++starting_;
    return "";
  }

  // A tracer that ended without a clean detach while its process lives (killed, or the step
  // mechanism failed): said in the process's stats and counted. A process that had no stopped
  // window yet goes back to snapshot windows; one that had keeps the stopped windows it got and
  // gets no more (its store weights one kind of window: switching would discard them).
  void CheckTracers() {
    struct Ended {
      uint32_t pid;
      std::string failure;
    };
    std::vector<Ended> ended;
    {
      std::lock_guard<std::mutex> lock(tracers_mu_);
      for (auto& [pid, tracer] : tracers_) {
        if (tracer.final || !tracer.collector->finished()) continue;
        std::string failure = tracer.collector->failure();
        if (failure.empty()) continue;  // a clean end: its process ended (ProcessGone settles it)
        // A process that ended took its tracer with it, whatever the tracer says.
        if (!ProcessAlive(pid)) continue;
        tracer.final = tracer.collector->Stop();
        --traced_now_;
        ended.push_back({pid, std::move(failure)});
      }
    }
    for (const Ended& e : ended) {
      bool back_to_snapshots = false;
      std::string why;
      {
        std::lock_guard<std::mutex> lock(mu_);
        Process& p = processes_[e.pid];
        ++p.tracer_ended;
        back_to_snapshots = p.stopped_windows == 0;
        if (back_to_snapshots) p.verdict = Verdict::kSnapshot;
        p.why += "; its tracer ended: " + e.failure +
                 (back_to_snapshots
                      ? ", before its first window: snapshot windows instead"
                      : ", after " + std::to_string(p.stopped_windows) + " windows: none since");
        why = p.why;
      }
      if (back_to_snapshots) {
        if (collectors::SnapshotWindowCollector* c = snapshot_.collector())
          (void)c->SetWindowsWanted(e.pid, true);
        sink_->WindowsFrom(e.pid, BranchWindows::kTimeRagged, why);
      } else {
        sink_->WindowsFrom(e.pid, BranchWindows::kTime, why);
      }
    }
  }

  void StartTracer(uint32_t pid) {
    // The snapshot source's windows come from every sampled process; a whole-host series'
    // session takes only those its join rule admits, and the others are never stopped (a
    // series of one executable stopped the processes beside it, and a sanitizer-built one's
    // leak check then failed at its exit: one tracer at a time).
    if (!sink_->Takes(pid)) {
      std::lock_guard<std::mutex> lock(mu_);
      --starting_;
      ++stops_not_taken_;
      Process& p = processes_[pid];
      p.verdict = Verdict::kSnapshot;  // its windows go on to the session, which refuses them
      TakeHeldLocked(p);
      return;
    }
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      why = processes_[pid].why;
    }
    // The store weights stopped windows as whole ones from now on: before the first arrives.
    sink_->WindowsFrom(pid, BranchWindows::kTime, why);
    if (collectors::SnapshotWindowCollector* c = snapshot_.collector())
      (void)c->SetWindowsWanted(pid, false);  // its samples are not emulated any more
    stepping::PtraceBurstSink burst_sink;
    burst_sink.on_window = [this, pid](const BranchBatch& b) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++processes_[pid].stopped_windows;
      }
      sink_->OfferBranches(b);
    };
    burst_sink.on_exec = [this, pid] { sink_->NoteExec(pid); };
    std::string note;
    std::unique_lock<std::mutex> tracers(tracers_mu_);
    auto collector = StartBurstTracer(pid, *targets_, std::move(burst_sink),
                                      every_process_ ? targets_->config.hybrid_stop_hz : 0, &note);
    std::vector<BranchBatch> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --starting_;
      Process& p = processes_[pid];
      if (collector.ok()) {
        p.verdict = Verdict::kStopped;
        p.probe_replaced += TakeHeldLocked(p).size();
      } else {
        // Not this process (Yama, another tracer, it exited): its snapshot windows, said.
        ++stops_refused_;
        p.verdict = Verdict::kSnapshot;
        p.why += "; refused (" + collector.status().message() + "): snapshot windows instead";
        release = TakeHeldLocked(p);
        p.snapshot_windows += release.size();
        why = p.why;
      }
    }
    if (collector.ok()) {
      ++traced_now_;
      ++tracers_started_;
      tracers_[pid].collector = std::move(*collector);
      if (!note.empty()) sink_->WindowsFrom(pid, BranchWindows::kTime, why + "; " + note);
      return;
    }
    tracers.unlock();
    if (collectors::SnapshotWindowCollector* c = snapshot_.collector())
      (void)c->SetWindowsWanted(pid, true);
    sink_->WindowsFrom(pid, BranchWindows::kTimeRagged, why);
    for (const BranchBatch& w : release) sink_->OfferBranches(w);
  }

  SourceSink* sink_ = nullptr;
  std::optional<SourceTargets> targets_;
  uint32_t window_taken_ = 32;
  bool every_process_ = false;
  size_t max_traced_ = 0;
  SnapshotSource snapshot_;
  std::string detail_;

  mutable std::mutex mu_;  // processes_, to_trace_ and the counts below
  std::map<uint32_t, Process> processes_;
  std::vector<uint32_t> to_trace_;  // judged for stops, waiting for the poll thread
  size_t starting_ = 0;             // ... or being started there
  size_t held_windows_ = 0;
  uint64_t unprobed_windows_ = 0;
  uint64_t not_probed_ = 0;
  uint64_t stops_over_limit_ = 0;
  uint64_t stops_refused_ = 0;
  uint64_t stops_not_taken_ = 0;  // judged for stops, but not a process the session takes

  mutable std::mutex tracers_mu_;  // tracers_; taken before mu_ where both are
  std::map<uint32_t, Tracer> tracers_;
  // Tracers running, and started in all (changed under tracers_mu_, read in Judge under mu_).
  std::atomic<size_t> traced_now_{0};
  std::atomic<size_t> tracers_started_{0};
};

}  // namespace

std::unique_ptr<LiveSource> MakeHybridSource() {
  return std::make_unique<HybridSource>();
}

}  // namespace pathprof::pipeline
