#include "pathprof/api/convert.h"

#include <google/protobuf/util/time_util.h>

#include "pathprof/api/resource_names.h"
#include "pathprof/api/session_request.h"
#include "pathprof/core/clock.h"

namespace pathprof::api {
namespace {

// A reason -> count map as DropCount rows, in the map's (reason) order.
void Counts(const std::map<std::string, uint64_t>& in,
            google::protobuf::RepeatedPtrField<v1::DropCount>* out) {
  for (const auto& [reason, n] : in) {
    v1::DropCount* d = out->Add();
    d->set_reason(reason);
    d->set_count(static_cast<int64_t>(n));
  }
}

}  // namespace

void ToProto(const pipeline::Location& in, v1::Location* out) {
  out->set_address(in.address);
  out->set_function(in.function);
  out->set_offset(in.offset);
  out->set_file(in.file);
  out->set_line(in.line);
  out->set_image(in.image);
  out->set_build_id(in.build_id);
  for (const auto& i : in.inlined_by) ToProto(i, out->add_inlined_by());
}

void ToProto(const pipeline::Estimate& in, v1::Estimate* out) {
  out->set_value(in.value);
  out->set_error_bound(in.error_bound);
  out->set_confidence(in.confidence);
  out->set_share(in.share);
}

void ToProto(const pipeline::HotPath& in, v1::HotPath* out) {
  ToProto(in.start, out->mutable_start());
  out->set_length(in.length);
  out->set_outcomes(in.outcomes);
  ToProto(in.estimate, out->mutable_estimate());
  out->set_metric(ToProto(in.metric));
  for (const auto& b : in.blocks) ToProto(b, out->add_blocks());
  out->set_pid(in.pid);
  out->set_comm(in.comm);
  out->set_observations(in.observations);
  for (const auto& c : in.contexts) {
    v1::PathContext* o = out->add_contexts();
    o->set_context_id(static_cast<int64_t>(c.node));
    for (const auto& f : c.functions) ToProto(f, o->add_functions());
    o->set_truncated(c.truncated);
    ToProto(c.estimate, o->mutable_estimate());
    o->set_observations(static_cast<int64_t>(c.observations));
  }
}

void ToProto(const pipeline::SessionInfo& in, v1::Session* out) {
  if (!in.id.empty()) out->set_name(SessionName(in.id));
  for (uint32_t p : in.pids) out->add_pids(p);
  out->set_state(ToProto(in.state));
  out->set_source(ToProto(in.source));
  std::string reason = in.source_reason;
  if (!in.stacks && !in.stacks_reason.empty())
    reason += (reason.empty() ? "" : "; ") + std::string("no stacks: ") + in.stacks_reason;
  out->set_source_reason(reason);
  using google::protobuf::util::TimeUtil;
  *out->mutable_start_time() = TimeUtil::MillisecondsToTimestamp(in.started_unix_ms);
  if (in.stopped_unix_ms)
    *out->mutable_end_time() = TimeUtil::MillisecondsToTimestamp(in.stopped_unix_ms);
  out->set_error(in.error);
  out->set_owner_uid(in.owner_uid);
  out->set_memory_bound_bytes(in.config.MemoryBoundBytes());
  ToProto(in.config, out->mutable_settings());
}

void ToProto(const pipeline::TargetStats& in, const std::string& session_id, v1::TargetStats* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  out->set_pid(in.pid);
  out->set_stack_samples(in.stack_samples);
  out->set_windows(in.windows);
  out->set_branches(in.branches);
  Counts(in.drops, out->mutable_drops());
  Counts(in.decode_errors, out->mutable_decode_errors());
  out->set_pipeline_cpu_seconds(in.pipeline_cpu_seconds);
  out->set_memory_bytes(in.memory_bytes);
  out->set_window_weighting(in.window_weighting);
  out->set_namespace_pid(in.namespace_pid);
  out->set_export_windows_kept(static_cast<int64_t>(in.export_windows_kept));
  out->set_export_windows_let_go(static_cast<int64_t>(in.export_windows_let_go));
  Counts(in.windows_held_back, out->mutable_windows_held_back());
  Counts(in.windows_by_source, out->mutable_windows_by_source());
}

void ToProto(const pipeline::HotPathsResult& in, const std::string& session_id, v1::HotPaths* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& p : in.paths) ToProto(p, out->add_paths());
  out->set_total(in.total);
  out->set_paths_distinct(in.paths_distinct);
  *out->mutable_compute_time() = google::protobuf::util::TimeUtil::MillisecondsToTimestamp(
      in.as_of_unix_ms ? in.as_of_unix_ms : UnixMs());
  out->set_estimator(ToProto(in.estimator));
  out->set_contexts_matched(static_cast<int64_t>(in.contexts_matched));
  out->set_context_windows(static_cast<int64_t>(in.context_windows));
}

void ToProto(const pipeline::HotSubpathsResult& in, const std::string& session_id,
             size_t max_subpaths, v1::HotSubpaths* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& sp : in.subpaths) {
    if (static_cast<size_t>(out->subpaths_size()) >= max_subpaths) break;
    auto* o = out->add_subpaths();
    for (const auto& b : sp.blocks) ToProto(b, o->add_blocks());
    o->set_length(sp.length);
    ToProto(sp.estimate, o->mutable_estimate());
    o->set_pid(sp.pid);
    o->set_comm(sp.comm);
  }
  out->set_sampling_frequency(in.sampling_frequency);
}

void ToProto(const pipeline::CallingContextTree& in, const std::string& session_id,
             v1::CallingContextTree* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& n : in.nodes) {
    auto* o = out->add_nodes();
    o->set_id(n.id);
    o->set_parent_id(n.parent_id);
    ToProto(n.function, o->mutable_function());
    if (n.call_site.address) ToProto(n.call_site, o->mutable_call_site());
    o->set_self_weight(n.self_weight);
    o->set_total_weight(n.total_weight);
    o->set_edge_weight(n.edge_weight);
    o->set_pid(n.pid);
    o->set_truncated(n.truncated);
    o->set_context_id(static_cast<int64_t>(n.context_id));
    o->set_windows(static_cast<int64_t>(n.windows));
  }
  out->set_total_weight(in.total_weight);
  out->set_samples(in.samples);
}

void ToProto(const pipeline::HotCallPairsResult& in, const std::string& session_id,
             v1::HotCallPairs* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& p : in.pairs) {
    auto* o = out->add_pairs();
    ToProto(p.call_site, o->mutable_call_site());
    ToProto(p.target, o->mutable_target());
    ToProto(p.estimate, o->mutable_estimate());
    o->set_pid(p.pid);
    o->set_comm(p.comm);
  }
}

void ToProto(const pipeline::HotMethodsResult& in, const std::string& session_id,
             v1::HotMethods* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& m : in.methods) {
    auto* o = out->add_methods();
    ToProto(m.function, o->mutable_function());
    ToProto(m.self, o->mutable_self());
    ToProto(m.entries, o->mutable_entries());
    o->set_pid(m.pid);
    o->set_comm(m.comm);
  }
  out->set_hot_data_streams_unsupported(in.hot_data_streams_unsupported);
}

void ToProto(const pipeline::ResidualPathsResult& in, const std::string& session_id,
             v1::ResidualPaths* out) {
  if (!session_id.empty()) out->set_session(SessionName(session_id));
  for (const auto& p : in.residual) ToProto(p, out->add_residual());
  out->set_known(in.known);
}

void ToProto(const collectors::SourceCapability& in, v1::SourceCapability* out) {
  out->set_available(in.available);
  out->set_detail(in.detail);
}

void ToProto(const stepping::MechanismResult& in, v1::SourceCapability* out) {
  out->set_available(in.works);
  out->set_detail(in.detail);
}

void ToProto(const stepping::StepProbeResult& p, v1::StepMechanisms* out) {
  ToProto(p.single_step, out->mutable_single_step());
  ToProto(p.dr_breakpoints, out->mutable_dr_breakpoints());
  ToProto(p.int3_breakpoints, out->mutable_int3_breakpoints());
  ToProto(p.block_step, out->mutable_block_step());
  ToProto(p.emulate, out->mutable_emulate());
  out->set_emulate_window_us(static_cast<double>(p.emulate_window_ns) / 1000.0);
  for (const std::string& n : p.lost_trap_after) out->add_lost_trap_after(n);
  out->set_single_step_us(static_cast<double>(p.single_step_ns) / 1000.0);
  out->set_int3_leg_us(static_cast<double>(p.int3_leg_ns) / 1000.0);
  out->set_dr_leg_us(static_cast<double>(p.dr_leg_ns) / 1000.0);
  out->set_auto_step_mode(ToProto(stepping::ChooseStepMode(std::nullopt, p).mode));
  out->set_from_cache(p.from_cache);
  for (const std::string& n : p.not_probed) out->add_not_probed(n);
}

void ToProto(const collectors::HostCapabilities& in, v1::Capabilities* out) {
  out->set_kernel_release(in.kernel_release);
  out->set_perf_event_paranoid(in.perf_event_paranoid);
  ToProto(in.ebpf, out->mutable_ebpf_stacks());
  ToProto(in.lbr, out->mutable_lbr());
  ToProto(in.intel_pt, out->mutable_intel_pt());
  ToProto(in.ptrace, out->mutable_ptrace_bursts());
  ToProto(in.snapshot, out->mutable_snapshot_windows());
  out->set_best_branch_source(ToProto(in.BestBranchSource()));
  if (in.step_probe.ran) ToProto(in.step_probe, out->mutable_step_mechanisms());
  out->set_simulated_quirks(in.simulated_quirks);
  out->set_running_as_root(in.is_root);
}

void ToProto(const pipeline::DecodeSummary& in, v1::DecodeSummary* out) {
  out->set_format(in.format);
  out->set_records(in.records);
  out->set_samples(in.samples);
  out->set_windows(in.windows);
  out->set_events(in.events);
  out->set_taken(in.taken);
  out->set_not_taken(in.not_taken);
  out->set_instructions(in.instructions);
  Counts(in.broken_windows, out->mutable_broken_windows());
  Counts(in.dropped_entries, out->mutable_dropped_entries());
  Counts(in.decode_errors, out->mutable_decode_errors());
  Counts(in.counters, out->mutable_counters());
}

}  // namespace pathprof::api
