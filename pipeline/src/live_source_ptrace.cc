// The ptrace-bursts source: one tracer (stepping::PtraceBurstCollector) per target, each
// window handed to the session as it arrives.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pathprof/pipeline/live_source.h"
#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/stepping/step_probe.h"
#include "process_tree.h"

namespace pathprof::pipeline {
namespace {

// The mode the tracer reported using, said once and briefly: asked for, or auto, the step
// probe's choice (stepping::ChooseStepMode on the probe it read, cached for this boot), whose
// whole reasoning `pathctl caps` prints. Should the two ever differ (a tracer that probed apart,
// as another user), both are said, with this process's reason.
std::string StepModeReport(std::optional<stepping::StepMode> requested, stepping::StepMode used) {
  const stepping::StepModeChoice choice =
      stepping::ChooseStepMode(requested, stepping::CachedStepProbe());
  const std::string name(stepping::StepModeName(used));
  if (choice.ok && choice.mode == used)
    return name +
           (requested ? " (asked for)" : " (auto: the step probe's choice, see pathctl caps)");
  return name + " (this process's probe decides " +
         std::string(stepping::StepModeName(choice.mode)) + ": " + choice.reason + ")";
}

class PtraceBurstSource final : public LiveSource {
 public:
  Status Start(const SourceTargets& targets, SourceSink& sink) override {
    const SamplingSettings& sampling = targets.config.sampling;
    requested_mode_ = sampling.step_mode;
    for (uint32_t pid : targets.config.pids) {
      stepping::PtraceBurstOptions po;
      po.pid = static_cast<pid_t>(pid);
      po.window_taken = sampling.window_branches;
      po.bursts_per_second = sampling.bursts_per_second;
      po.max_stopped_fraction = sampling.max_stopped_fraction;
      po.step_mode = sampling.step_mode;
      if (auto it = targets.run_as.find(pid); it != targets.run_as.end()) {
        // The tracer runs as the requester, without capabilities: the kernel then refuses a
        // setuid elevation under it, and applies Yama's ptrace scope, as for the user's own tools.
        po.run_as = stepping::TracerCredentials{it->second.uid, it->second.gid};
      }
      stepping::PtraceBurstSink burst_sink;
      burst_sink.on_window = [&sink](const BranchBatch& b) { sink.OfferBranches(b); };
      burst_sink.on_exec = [&sink, pid] { sink.NoteExec(pid); };
      auto collector = stepping::PtraceBurstCollector::Start(po, burst_sink);
      if (!collector.ok() && po.run_as && targets.run_as_preferred &&
          collector.status().code() == ErrorCode::kPermission) {
        // The target's user may not attach here (Yama): the caller's tracer, said.
        skipped_ += (skipped_.empty() ? "" : "; ") + std::string("the tracer of pid ") +
                    std::to_string(pid) + " runs as the caller: as uid " +
                    std::to_string(po.run_as->uid) + " it could not attach (" +
                    collector.status().message() + ")";
        po.run_as.reset();
        collector = stepping::PtraceBurstCollector::Start(po, std::move(burst_sink));
      }
      if (!collector.ok()) {
        if (targets.all_or_nothing) {
          tracers_.clear();
          return collector.status();
        }
        skipped_ += (skipped_.empty() ? "" : "; ") + std::string("ptrace bursts failed for pid ") +
                    std::to_string(pid) + ": " + collector.status().message();
        continue;
      }
      tracers_[pid].collector = std::move(*collector);
    }
    if (tracers_.empty()) return Status(ErrorCode::kUnavailable, skipped_);
    return Status::Ok();
  }

  std::string Detail() const override {
    if (tracers_.empty()) return skipped_;
    return skipped_ + (skipped_.empty() ? "" : "; ") + "step mode " +
           StepModeReport(requested_mode_, tracers_.begin()->second.collector->step_mode());
  }

  SourceCounters Counters() const override {
    SourceCounters out;
    for (const auto& [pid, tracer] : tracers_) {
      const stepping::PtraceBurstStats st =
          tracer.final ? *tracer.final : tracer.collector->stats();
      SourceLosses& losses = out[pid];
      losses.drops["burst_aborted_syscall"] = st.aborted_syscall;
      losses.drops["burst_aborted_signal"] = st.aborted_signal;
      losses.drops["burst_aborted_exit"] = st.aborted_exit;
      losses.drops["burst_aborted_steps"] = st.aborted_steps;
      losses.drops["burst_skipped_no_thread"] = st.skipped_no_thread;
      // The other ends of a burst without a window, each by its reason: none is silent.
      losses.drops["burst_aborted_budget"] = st.aborted_budget;
      losses.drops["burst_aborted_timeout"] = st.aborted_timeout;
      losses.drops["burst_aborted_ptrace"] = st.aborted_ptrace;
      losses.drops["burst_aborted_trap_flag"] = st.aborted_trap_flag;
      losses.drops["burst_window_dropped_pipe"] = st.windows_dropped_pipe;
      losses.decode_errors["burst_undecodable_instruction"] = st.aborted_decode;
      losses.held_back["stopped_time_cap"] = st.deferred_cap;
    }
    return out;
  }

  // A tracer that died (killed, or failed) leaves the session without branches.
  std::string Failure() const override {
    for (const auto& [pid, tracer] : tracers_) {
      const stepping::PtraceBurstCollector& c = *tracer.collector;
      if (!c.finished() || c.failure().empty() || !ProcessAlive(pid)) continue;
      return "the ptrace tracer of pid " + std::to_string(pid) + " ended: " + c.failure();
    }
    return "";
  }

  // The tracers detach in parallel.
  void RequestStop() override {
    for (auto& [pid, tracer] : tracers_) tracer.collector->RequestStop();
  }

  void Stop() override {
    for (auto& [pid, tracer] : tracers_) tracer.final = tracer.collector->Stop();
  }

 private:
  struct Tracer {
    std::unique_ptr<stepping::PtraceBurstCollector> collector;
    std::optional<stepping::PtraceBurstStats> final;  // Stop()'s counters
  };
  std::map<uint32_t, Tracer> tracers_;
  std::string skipped_;  // the targets a lenient start could not trace, and why
  std::optional<stepping::StepMode> requested_mode_;
};

}  // namespace

std::unique_ptr<LiveSource> MakePtraceBurstSource() {
  return std::make_unique<PtraceBurstSource>();
}

}  // namespace pathprof::pipeline
