// The live perf sources, LBR and Intel PT: one perf event per target (collectors/lbr_source.h,
// pt_source.h), their rings drained by the session's poll thread. All or nothing: a target that
// cannot be traced fails the source, naming it.
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "pathprof/collectors/lbr_source.h"
#include "pathprof/collectors/pt_source.h"
#include "pathprof/pipeline/live_source.h"

namespace pathprof::pipeline {
namespace {

// `Perf` is collectors::LbrSource or collectors::PtSource; `open` starts one on a target.
template <typename Perf>
class PerfSource final : public LiveSource {
 public:
  using Open = Result<std::unique_ptr<Perf>> (*)(uint32_t pid, const SessionConfig& config,
                                                 collectors::BranchWindowSink sink);
  PerfSource(collectors::BranchSource kind, Open open) : kind_(kind), open_(open) {}

  Status Start(const SourceTargets& targets, SourceSink& sink) override {
    auto to_sink = [&sink](const BranchBatch& b) { sink.OfferBranches(b); };
    for (uint32_t pid : targets.config.pids) {
      auto started = open_(pid, targets.config, to_sink);
      if (!started.ok()) {
        perf_.clear();
        return Status(started.status().code(), std::string(collectors::BranchSourceName(kind_)) +
                                                   " could not start on pid " +
                                                   std::to_string(pid) + ": " +
                                                   started.status().message());
      }
      perf_.emplace(pid, std::move(*started));
    }
    return Status::Ok();
  }

  bool NeedsPolling() const override { return true; }
  void Poll() override {
    for (auto& [pid, perf] : perf_) perf->Poll();
  }

  SourceCounters Counters() const override {
    SourceCounters out;
    for (const auto& [pid, perf] : perf_) {
      collectors::LiveSourceCounters c = perf->counters();
      out[pid] = SourceLosses{std::move(c.drops), std::move(c.decode_errors), {}, {}};
    }
    return out;
  }

  // The last records in the ring; PT also decodes the trace it held back for the next PSB.
  void Stop() override {
    for (auto& [pid, perf] : perf_) {
      if constexpr (requires(Perf & p) { p.Flush(); })
        perf->Flush();
      else
        perf->Poll();
    }
  }

 private:
  collectors::BranchSource kind_;
  Open open_;
  std::map<uint32_t, std::unique_ptr<Perf>> perf_;
};

Result<std::unique_ptr<collectors::LbrSource>> OpenLbr(uint32_t pid, const SessionConfig& config,
                                                       collectors::BranchWindowSink sink) {
  collectors::LbrSourceOptions o;
  o.pid = static_cast<pid_t>(pid);
  o.sample_period = config.sampling.lbr_period;
  return collectors::LbrSource::Start(o, std::move(sink));
}

Result<std::unique_ptr<collectors::PtSource>> OpenPt(uint32_t pid, const SessionConfig&,
                                                     collectors::BranchWindowSink sink) {
  collectors::PtSourceOptions o;
  o.pid = static_cast<pid_t>(pid);
  return collectors::PtSource::Start(o, std::move(sink));
}

}  // namespace

std::unique_ptr<LiveSource> MakeLbrSource() {
  return std::make_unique<PerfSource<collectors::LbrSource>>(collectors::BranchSource::kLbr,
                                                             OpenLbr);
}

std::unique_ptr<LiveSource> MakePtSource() {
  return std::make_unique<PerfSource<collectors::PtSource>>(collectors::BranchSource::kIntelPt,
                                                            OpenPt);
}

}  // namespace pathprof::pipeline
