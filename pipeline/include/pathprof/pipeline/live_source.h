// A live source: what a session starts on its targets to collect from them while they run (the
// eBPF stack sampler, ptrace bursts, LBR, Intel PT), behind one interface, so that the session
// knows none of them by type. Which source a session starts, what each needs from the host and
// where it falls back to are rows of one table (source_table.h); docs/pipeline.md ("Live
// sources") says how to add one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::pipeline {

// Where a source hands what it collects: the session's bounded queues (whose refusals are counted
// by the session). Callable from any thread, from Start until Stop returns.
class SourceSink {
 public:
  virtual ~SourceSink() = default;
  // One batch of one thread's branches: a window (batch.window) or a piece of a stream.
  virtual void OfferBranches(const BranchBatch& batch) = 0;
  virtual void OfferStack(const collectors::RawStackSample& sample) = 0;
  // Target `pid` exec'd (a tracer saw it): its credentials and mappings are read again.
  virtual void NoteExec(uint32_t pid) = 0;
  // For a source that chooses per process where its windows come from (hybrid): `pid`'s
  // windows from now on are of this kind, for the reason `why`; called before the first such
  // window is offered. The session re-weights that process's store (ProfileStore::UseWindows).
  virtual void WindowsFrom(uint32_t /*pid*/, BranchWindows /*windows*/,
                           const std::string& /*why*/) {}
  // Whether the session takes `pid` (it has a store, or may join: a whole-host series admits
  // only the processes its unit, cgroup or executable names). A source that acts on a process
  // beyond reading it (hybrid: a stop) asks first; what the session does not take it must not
  // touch.
  virtual bool Takes(uint32_t /*pid*/) { return true; }
};

// Who a confined session's collectors act as on a target (stepping::TracerCredentials' fields).
struct RunAs {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// What a source is started on.
struct SourceTargets {
  const SessionConfig& config;  // pids, sampling settings, follow_children, confine_to_uid
  // A confined session (config.confine_to_uid): whom each target's collector runs as. Empty
  // otherwise.
  std::map<uint32_t, RunAs> run_as;
  // run_as is a preference (SessionConfig::tracer_as_target), not a confinement: a collector
  // refused as that user starts as the caller instead.
  bool run_as_preferred = false;
  // The source was asked for by name (not auto): a target it cannot watch fails it. Otherwise a
  // source may start on the targets it can, say in Detail() which it could not, and fail only
  // when it could start on none.
  bool all_or_nothing = true;
};

// What a source lost, by reason (stable snake_case names: the stats' words), counted since Start.
struct SourceLosses {
  std::map<std::string, uint64_t> drops;          // data that never reached a profile
  std::map<std::string, uint64_t> decode_errors;  // data that could not be decoded
  // Windows the source chose not to take, by reason (a cap on the target's stopped time): what
  // bounds the rate, not a loss; said beside the windows so a low rate explains itself.
  std::map<std::string, uint64_t> held_back;
  // Windows handed on, by the source they came from, for a source that takes them from more
  // than one (hybrid: "snapshot", "stopped"). Not losses.
  std::map<std::string, uint64_t> windows_by_source;
};
// Losses by the process they belong to. kSessionLosses: the session's own (its targets' share of
// a host-wide ring), counted on the session's first store.
inline constexpr uint32_t kSessionLosses = 0;
using SourceCounters = std::map<uint32_t, SourceLosses>;

class LiveSource {
 public:
  virtual ~LiveSource() = default;  // releases what Start took; the sink is not called after it

  // Starts collecting from the targets; from now on the sink may be called, from any thread.
  // An error says what could not start and on which target (a source whose Start fails has
  // handed nothing to the sink).
  virtual Status Start(const SourceTargets& targets, SourceSink& sink) = 0;
  // What runs, for the session's reason ("eBPF stack sampler on cycles at 99 Hz", "step
  // mode emulate (...)"), with the targets a lenient Start skipped; "" for nothing.
  virtual std::string Detail() const { return ""; }

  // Sources that must be drained (perf rings) are polled every few milliseconds from the
  // session's poll thread; Poll is never called concurrently with itself or Stop.
  virtual bool NeedsPolling() const { return false; }
  virtual void Poll() {}

  // Cumulative losses (any thread). The session adds what grew since its last look to each
  // process's accounting, so nothing is counted twice and nothing is lost.
  virtual SourceCounters Counters() const = 0;
  // The process left the session (it exited): a source filtering by pid lets it go before the
  // pid can be reused. From the session's control thread, possibly while Poll runs.
  virtual void ProcessGone(uint32_t /*pid*/) {}
  // Why the source ended on its own while its target lives (a tracer was killed), or "": the
  // session then fails with this message.
  virtual std::string Failure() const { return ""; }

  // Asks the source to stop without waiting, so that several stop in parallel.
  virtual void RequestStop() {}
  // Stops collecting and hands on what is still buffered; the counters are final after it.
  virtual void Stop() = 0;
};

}  // namespace pathprof::pipeline
