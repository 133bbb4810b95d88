// One ptrace-burst tracer on one process (burst_tracer.h).
#include "burst_tracer.h"

#include <utility>

namespace pathprof::pipeline {

Result<std::unique_ptr<stepping::PtraceBurstCollector>> StartBurstTracer(
    uint32_t pid, const SourceTargets& targets, stepping::PtraceBurstSink sink,
    double bursts_per_second, std::string* note) {
  const SamplingSettings& sampling = targets.config.sampling;
  stepping::PtraceBurstOptions po;
  po.pid = static_cast<pid_t>(pid);
  po.window_taken = sampling.window_branches;
  po.bursts_per_second = bursts_per_second > 0 ? bursts_per_second : sampling.bursts_per_second;
  po.max_stopped_fraction = sampling.max_stopped_fraction;
  po.step_mode = sampling.step_mode;
  if (auto it = targets.run_as.find(pid); it != targets.run_as.end()) {
    // The tracer runs as the requester, without capabilities: the kernel then refuses a
    // setuid elevation under it, and applies Yama's ptrace scope, as for the user's own tools.
    po.run_as = stepping::TracerCredentials{it->second.uid, it->second.gid};
  }
  stepping::PtraceBurstSink kept = sink;  // for a second try as the caller
  auto collector = stepping::PtraceBurstCollector::Start(po, std::move(sink));
  if (!collector.ok() && po.run_as && targets.run_as_preferred &&
      collector.status().code() == ErrorCode::kPermission) {
    // The target's user may not attach here (Yama): the caller's tracer, said.
    *note = "the tracer of pid " + std::to_string(pid) + " runs as the caller: as uid " +
            std::to_string(po.run_as->uid) + " it could not attach (" +
            collector.status().message() + ")";
    po.run_as.reset();
    collector = stepping::PtraceBurstCollector::Start(po, std::move(kept));
  }
  return collector;
}

SourceLosses BurstLosses(const stepping::PtraceBurstStats& st) {
  SourceLosses losses;
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
  return losses;
}

}  // namespace pathprof::pipeline
