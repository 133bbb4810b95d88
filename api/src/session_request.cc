#include "pathprof/api/session_request.h"

#include <google/protobuf/duration.pb.h>

#include <cmath>
#include <string>

#include "pathprof/api/convert.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/api/queries.h"

namespace pathprof::api {
namespace {

// Durations in a request are whole seconds, 0 to `max_s`.
grpc::Status Seconds(const char* field, const google::protobuf::Duration& d, uint64_t max_s,
                     const char* key, uint32_t* out) {
  if (d.seconds() < 0 || d.nanos() < 0)
    return InvalidArgument(std::string(field) + " is negative", field);
  if (static_cast<uint64_t>(d.seconds()) > max_s) return AboveLimit(field, d.seconds(), max_s, key);
  *out = static_cast<uint32_t>(d.seconds());
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ToSessionSettings(const v1::StartSessionRequest& req, const SessionBounds& b,
                               pipeline::SessionConfig* out) {
  pipeline::SessionConfig& c = *out;
  c.source = FromProto(req.source());
  const auto& e = req.engine();
  const auto& sm = req.sampling();
  const auto& o = req.osp();
  const auto& pc = req.pcct();
  for (grpc::Status st : {
           NonNegative("engine.extension", e.extension()),
           NonNegative("engine.max_path_length", e.max_path_length()),
           Bounded("engine.hpt_entries", e.hpt_entries(), b.max_hpt_entries, "max_hpt_entries"),
           NonNegative("engine.hpt_ways", e.hpt_ways()),
           Bounded("sampling.stack_hz", sm.stack_hz(), b.max_stack_hz, "max_stack_hz"),
           Bounded("sampling.window_branches", sm.window_branches(), b.max_window_branches,
                   "max_window_branches"),
           NonNegative("sampling.lbr_period", sm.lbr_period()),
           NonNegative("max_descendants", req.max_descendants()),
           Bounded("osp.memory_entries", o.memory_entries(), b.max_osp_entries, "max_osp_entries"),
           NonNegative("osp.max_length", o.max_length()),
           Bounded("pcct.max_depth", pc.max_depth(), b.max_depth, "max_depth"),
           Bounded("pcct.max_nodes", pc.max_nodes(), b.max_pcct_nodes, "max_pcct_nodes"),
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
    return InvalidArgument("sampling.bursts_per_second must be in [0, 10000]");
  if (sm.bursts_per_second() > 0) c.sampling.bursts_per_second = sm.bursts_per_second();
  if (!(sm.max_stopped_fraction() >= 0 && sm.max_stopped_fraction() <= 0.5))
    return InvalidArgument("sampling.max_stopped_fraction must be in [0, 0.5]");
  if (sm.max_stopped_fraction() > 0) c.sampling.max_stopped_fraction = sm.max_stopped_fraction();
  c.sampling.call_graph = FromProto(sm.call_graph());
  c.sampling.step_mode = FromProto(sm.step_mode(), b.default_step_mode);
  c.follow_children = req.follow_children();
  // Unset: pipeline::kSessionDefaults' value, which pathctl run and start show too.
  c.max_descendants = req.max_descendants() ? static_cast<uint32_t>(req.max_descendants())
                                            : pipeline::kSessionDefaults.max_descendants;
  if (c.follow_children && c.max_descendants > b.max_pids_per_session)
    return AboveLimit("max_descendants", c.max_descendants, b.max_pids_per_session,
                      "max_pids_per_session");
  if (o.memory_entries()) c.osp.memory_entries = o.memory_entries();
  if (o.max_length()) c.osp.max_length = o.max_length();
  if (!std::isfinite(o.confidence())) return InvalidArgument("osp.confidence must be in (0, 1)");
  if (o.confidence() != 0) c.osp.confidence = o.confidence();
  if (pc.max_depth()) c.pcct.max_depth = pc.max_depth();
  if (pc.max_nodes()) c.pcct.max_nodes = pc.max_nodes();
  if (grpc::Status st = Seconds("pcct.purge_interval", pc.purge_interval(), b.max_duration_s,
                                "max_duration_s", &c.pcct.purge_interval_s);
      !st.ok())
    return st;
  return Seconds("duration", req.duration(), b.max_duration_s, "max_duration_s", &c.duration_s);
}

}  // namespace pathprof::api
