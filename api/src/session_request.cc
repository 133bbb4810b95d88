#include "pathprof/api/session_request.h"

#include <google/protobuf/duration.pb.h>

#include <cmath>
#include <string>

#include "pathprof/api/convert.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/api/queries.h"
#include "pathprof/collectors/ebpf_stack_sampler.h"

namespace pathprof::api {
namespace {

// Durations in a request are whole seconds, 0 to `max_s`.
grpc::Status Seconds(const std::string& field, const google::protobuf::Duration& d, uint64_t max_s,
                     const char* key, uint32_t* out) {
  if (d.seconds() < 0 || d.nanos() < 0) return InvalidArgument(field + " is negative", field);
  if (static_cast<uint64_t>(d.seconds()) > max_s)
    return AboveLimit(field.c_str(), d.seconds(), max_s, key);
  *out = static_cast<uint32_t>(d.seconds());
  return grpc::Status::OK;
}

google::protobuf::Duration Secs(uint32_t s) {
  google::protobuf::Duration d;
  d.set_seconds(s);
  return d;
}

}  // namespace

grpc::Status ToSessionConfig(const v1::SessionSettings& settings, const SessionBounds& b,
                             const std::string& prefix, pipeline::SessionConfig* out) {
  pipeline::SessionConfig& c = *out;
  c.source = FromProto(settings.source());
  const auto& e = settings.engine();
  const auto& sm = settings.sampling();
  const auto& o = settings.osp();
  const auto& pc = settings.pcct();
  // A field's name as the request spells it (the strings outlive each full expression below).
  auto f = [&prefix](const char* path) { return prefix + path; };
  for (grpc::Status st : {
           NonNegative(f("engine.extension").c_str(), e.extension()),
           NonNegative(f("engine.max_path_length").c_str(), e.max_path_length()),
           Bounded(f("engine.hpt_entries").c_str(), e.hpt_entries(), b.max_hpt_entries,
                   "max_hpt_entries"),
           NonNegative(f("engine.hpt_ways").c_str(), e.hpt_ways()),
           Bounded(f("sampling.stack_hz").c_str(), sm.stack_hz(), b.max_stack_hz, "max_stack_hz"),
           Bounded(f("sampling.window_branches").c_str(), sm.window_branches(),
                   b.max_window_branches, "max_window_branches"),
           NonNegative(f("sampling.lbr_period").c_str(), sm.lbr_period()),
           NonNegative(f("max_descendants").c_str(), settings.max_descendants()),
           Bounded(f("osp.memory_entries").c_str(), o.memory_entries(), b.max_osp_entries,
                   "max_osp_entries"),
           NonNegative(f("osp.max_length").c_str(), o.max_length()),
           Bounded(f("pcct.max_depth").c_str(), pc.max_depth(), b.max_depth, "max_depth"),
           Bounded(f("pcct.max_nodes").c_str(), pc.max_nodes(), b.max_pcct_nodes, "max_pcct_nodes"),
       })
    if (!st.ok()) return st;
  c.engine.path_kind = FromProto(e.path_kind());
  if (e.extension()) c.engine.extension = e.extension();
  if (e.max_path_length()) c.engine.max_path_length = e.max_path_length();
  if (e.hpt_entries()) c.engine.hpt_entries = e.hpt_entries();
  if (e.hpt_ways()) c.engine.hpt_ways = e.hpt_ways();
  c.engine.hpt_index_start_only = e.hpt_index() == v1::HPT_INDEX_START;
  c.engine.hpt_lru = e.hpt_replacement() == v1::HPT_REPLACEMENT_LRU;
  c.engine.metric = FromProto(e.metric());
  if (sm.has_stack_hz()) c.sampling.stack_hz = sm.stack_hz();
  if (sm.window_branches()) c.sampling.window_branches = sm.window_branches();
  if (sm.lbr_period()) c.sampling.lbr_period = sm.lbr_period();
  // Negated comparisons so that NaN, which compares false with everything, is refused.
  if (!(sm.bursts_per_second() >= 0 && sm.bursts_per_second() <= 10000))
    return InvalidArgument(f("sampling.bursts_per_second must be in [0, 10000]"),
                           f("sampling.bursts_per_second"));
  if (sm.bursts_per_second() > 0) c.sampling.bursts_per_second = sm.bursts_per_second();
  if (!(sm.max_stopped_fraction() >= 0 && sm.max_stopped_fraction() <= 0.5))
    return InvalidArgument(f("sampling.max_stopped_fraction must be in [0, 0.5]"),
                           f("sampling.max_stopped_fraction"));
  if (sm.max_stopped_fraction() > 0) c.sampling.max_stopped_fraction = sm.max_stopped_fraction();
  c.sampling.call_graph = FromProto(sm.call_graph());
  if (sm.stack_copy_bytes() != 0) {
    if (sm.stack_copy_bytes() < static_cast<int32_t>(collectors::kMinStackCopyBytes) ||
        sm.stack_copy_bytes() > static_cast<int32_t>(collectors::kMaxStackCopyBytes))
      return InvalidArgument(f("sampling.stack_copy_bytes must be 0 (the default, 16384) or "
                               "4096..65536"),
                             f("sampling.stack_copy_bytes"));
    c.sampling.stack_copy_bytes = static_cast<uint32_t>(sm.stack_copy_bytes());
  }
  c.sampling.step_mode = FromProto(sm.step_mode(), b.default_step_mode);
  c.follow_children = settings.follow_children();
  // Unset: pipeline::kSessionDefaults' value, which pathctl run and start show too.
  c.max_descendants = settings.max_descendants() ? static_cast<uint32_t>(settings.max_descendants())
                                                 : pipeline::kSessionDefaults.max_descendants;
  if (c.follow_children && c.max_descendants > b.max_pids_per_session)
    return AboveLimit(f("max_descendants").c_str(), c.max_descendants, b.max_pids_per_session,
                      "max_pids_per_session");
  if (o.memory_entries()) c.osp.memory_entries = o.memory_entries();
  if (o.max_length()) c.osp.max_length = o.max_length();
  if (!std::isfinite(o.confidence()))
    return InvalidArgument(f("osp.confidence must be in (0, 1)"), f("osp.confidence"));
  if (o.confidence() != 0) c.osp.confidence = o.confidence();
  if (pc.max_depth()) c.pcct.max_depth = pc.max_depth();
  if (pc.max_nodes()) c.pcct.max_nodes = pc.max_nodes();
  if (grpc::Status st = Seconds(f("pcct.purge_interval"), pc.purge_interval(), b.max_duration_s,
                                "max_duration_s", &c.pcct.purge_interval_s);
      !st.ok())
    return st;
  return Seconds(f("duration"), settings.duration(), b.max_duration_s, "max_duration_s",
                 &c.duration_s);
}

void ToProto(const pipeline::SessionConfig& c, v1::SessionSettings* out) {
  out->set_source(ToProto(c.source));
  v1::EngineSettings* e = out->mutable_engine();
  e->set_path_kind(ToProto(c.engine.path_kind));
  e->set_extension(static_cast<int32_t>(c.engine.extension));
  e->set_max_path_length(static_cast<int32_t>(c.engine.max_path_length));
  e->set_hpt_entries(static_cast<int32_t>(c.engine.hpt_entries));
  e->set_hpt_ways(static_cast<int32_t>(c.engine.hpt_ways));
  e->set_metric(ToProto(c.engine.metric));
  e->set_hpt_index(c.engine.hpt_index_start_only ? v1::HPT_INDEX_START : v1::HPT_INDEX_XOR);
  e->set_hpt_replacement(c.engine.hpt_lru ? v1::HPT_REPLACEMENT_LRU : v1::HPT_REPLACEMENT_LFU);
  v1::SamplingSettings* sm = out->mutable_sampling();
  sm->set_stack_hz(static_cast<int32_t>(c.sampling.stack_hz));
  sm->set_window_branches(static_cast<int32_t>(c.sampling.window_branches));
  sm->set_lbr_period(static_cast<int64_t>(c.sampling.lbr_period));
  sm->set_bursts_per_second(c.sampling.bursts_per_second);  // 0: the step mode's rate
  sm->set_max_stopped_fraction(c.sampling.max_stopped_fraction);
  sm->set_step_mode(ToProto(c.sampling.step_mode));
  sm->set_call_graph(ToProto(c.sampling.call_graph));
  sm->set_stack_copy_bytes(static_cast<int32_t>(c.sampling.stack_copy_bytes));
  v1::OspSettings* o = out->mutable_osp();
  o->set_memory_entries(static_cast<int32_t>(c.osp.memory_entries));
  o->set_max_length(static_cast<int32_t>(c.osp.max_length));
  o->set_confidence(c.osp.confidence);
  v1::PcctSettings* pc = out->mutable_pcct();
  pc->set_max_depth(static_cast<int32_t>(c.pcct.max_depth));
  pc->set_max_nodes(static_cast<int32_t>(c.pcct.max_nodes));
  *pc->mutable_purge_interval() = Secs(c.pcct.purge_interval_s);
  *out->mutable_duration() = Secs(c.duration_s);
  out->set_follow_children(c.follow_children);
  out->set_max_descendants(static_cast<int32_t>(c.max_descendants));
}

v1::SessionTarget TargetOf(const v1::StartSessionRequest& req) {
  v1::SessionTarget t;
  switch (req.target_case()) {
    case v1::StartSessionRequest::kPid:
      t.set_pid(req.pid());
      break;
    case v1::StartSessionRequest::kExecutableName:
      t.set_executable_name(req.executable_name());
      break;
    case v1::StartSessionRequest::kCgroup:
      t.set_cgroup(req.cgroup());
      break;
    case v1::StartSessionRequest::kSystemdUnit:
      t.set_systemd_unit(req.systemd_unit());
      break;
    case v1::StartSessionRequest::TARGET_NOT_SET:
      break;
  }
  return t;
}

v1::SessionSettings SettingsOf(const v1::StartSessionRequest& req) {
  v1::SessionSettings s;
  s.set_source(req.source());
  if (req.has_engine()) *s.mutable_engine() = req.engine();
  if (req.has_sampling()) *s.mutable_sampling() = req.sampling();
  if (req.has_osp()) *s.mutable_osp() = req.osp();
  if (req.has_pcct()) *s.mutable_pcct() = req.pcct();
  if (req.has_duration()) *s.mutable_duration() = req.duration();
  s.set_follow_children(req.follow_children());
  s.set_max_descendants(req.max_descendants());
  return s;
}

}  // namespace pathprof::api
