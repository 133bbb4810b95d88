// The ptrace-bursts source: one tracer (stepping::PtraceBurstCollector) per target, each
// window handed to the session as it arrives.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "burst_tracer.h"
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
    requested_mode_ = targets.config.sampling.step_mode;
    for (uint32_t pid : targets.config.pids) {
      stepping::PtraceBurstSink burst_sink;
      burst_sink.on_window = [&sink](const BranchBatch& b) { sink.OfferBranches(b); };
      burst_sink.on_exec = [&sink, pid] { sink.NoteExec(pid); };
      std::string note;
      auto collector = StartBurstTracer(pid, targets, std::move(burst_sink), 0, &note);
      if (!note.empty()) skipped_ += (skipped_.empty() ? "" : "; ") + note;
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
      out[pid] = BurstLosses(tracer.final ? *tracer.final : tracer.collector->stats());
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
