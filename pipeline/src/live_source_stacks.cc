// The stack source: the session's subscription to the process's one eBPF stack sampler
// (collectors/shared_stack_sampler.h), on its targets and, with follow_children, their
// descendants.
#include <memory>
#include <string>

#include "pathprof/collectors/shared_stack_sampler.h"
#include "pathprof/pipeline/live_source.h"
#include "process_tree.h"

namespace pathprof::pipeline {
namespace {

class StackSource final : public LiveSource {
 public:
  Status Start(const SourceTargets& targets, SourceSink& sink) override {
    const SessionConfig& config = targets.config;
    collectors::StackSubscriptionSettings ss;
    ss.frequency_hz = static_cast<int>(config.sampling.stack_hz);
    ss.pids = config.pids;
    ss.kernel_stacks = config.sampling.kernel_stacks;
    // A task whose credentials are not plainly the requester's never reaches this session.
    ss.only_uid = config.confine_to_uid;
    ss.stack_copy_bytes =
        config.sampling.call_graph == CallGraph::kDwarf ? config.sampling.stack_copy_bytes : 0;
    ss.follow_children = config.follow_children;
    auto started = collectors::StackSubscription::Start(
        ss, [&sink](const collectors::RawStackSample& sample) { sink.OfferStack(sample); });
    if (!started.ok())
      return Status(started.status().code(),
                    "eBPF stacks unavailable: " + started.status().message());
    subscription_ = std::move(*started);
    // Children forked before the fork tracepoint was attached (a command that started before
    // profiling did): found once in /proc, after the tracepoint, so none is missed.
    if (config.follow_children)
      for (uint32_t pid : Descendants(config.pids)) (void)subscription_->AddPid(pid);
    detail_ = "eBPF stack sampler on " + subscription_->stats().event + " at " +
              std::to_string(config.sampling.stack_hz) + " Hz";
    return Status::Ok();
  }

  std::string Detail() const override { return detail_; }

  // The session's targets' share of the host's ring: the session's own losses.
  SourceCounters Counters() const override {
    if (!subscription_) return {};
    const collectors::StackSubscriptionStats st = subscription_->stats();
    SourceLosses losses;
    losses.decode_errors["stack_copy_failed"] = st.stack_copies_failed;
    losses.drops["ebpf_ringbuf_full"] = st.ringbuf_full;
    losses.drops["stack_after_privilege_gain"] = st.filtered_credentials;
    return {{kSessionLosses, std::move(losses)}};
  }

  void ProcessGone(uint32_t pid) override {
    if (subscription_) (void)subscription_->RemovePid(pid);
  }

  void Stop() override {
    if (subscription_) subscription_->Flush();
  }

 private:
  std::unique_ptr<collectors::StackSubscription> subscription_;
  std::string detail_;
};

}  // namespace

std::unique_ptr<LiveSource> MakeStackSource() {
  return std::make_unique<StackSource>();
}

}  // namespace pathprof::pipeline
