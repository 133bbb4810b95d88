// A Session's settings (v1::SessionSettings) <-> a pipeline::SessionConfig, for the daemon's
// CreateSession and the Sessions it answers with. In: every field checked against the server's
// bounds (a negative count, or one above its bound, refused naming the field and the
// pathprofd.toml key), and 0 or unset keeping the default. Out: the value in use for every field,
// so that the settings a reply shows create the same session again. The deprecated
// StartSessionRequest carries the same fields flat; TargetOf and SettingsOf lift them out, so that
// StartSession and CreateSession are one code path. The targets, the owner and the quotas are the
// caller's: they need the peer.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <limits>
#include <string>

#include "pathprof/pipeline/session_config.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::api {

// Each maximum is named by the limits.* key that sets it in pathprofd.toml.
struct SessionBounds {
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
  uint32_t max_hpt_entries = kUnbounded;
  uint32_t max_stack_hz = kUnbounded;
  uint32_t max_window_branches = kUnbounded;
  uint32_t max_osp_entries = kUnbounded;
  uint32_t max_depth = kUnbounded;  // PCCT depth
  uint32_t max_pcct_nodes = kUnbounded;
  uint32_t max_duration_s = kUnbounded;  // the session's and the PCCT purge interval's
  uint32_t max_pids_per_session = kUnbounded;
  // What an unset sampling.step_mode means: the daemon's [ptrace] step_mode (nullopt: auto).
  stepping::StepRequest default_step_mode;
};

// Where the settings sit in the request, for the field names errors carry: "" for the
// deprecated StartSessionRequest (engine.hpt_entries), this for CreateSessionRequest.
inline constexpr char kCreateSettingsField[] = "session.settings.";

// Fills everything in `out` but pids, owner_uid and confine_to_uid; OK, or INVALID_ARGUMENT
// with an ErrorInfo naming the field, spelled `field_prefix` + its path in SessionSettings.
grpc::Status ToSessionConfig(const v1::SessionSettings& settings, const SessionBounds& bounds,
                             const std::string& field_prefix, pipeline::SessionConfig* out);

// The settings in use, every field filled in (the inverse of ToSessionConfig).
void ToProto(const pipeline::SessionConfig& in, v1::SessionSettings* out);

// The deprecated request's fields, as CreateSessionRequest.session holds them.
v1::SessionTarget TargetOf(const v1::StartSessionRequest& req);
v1::SessionSettings SettingsOf(const v1::StartSessionRequest& req);

}  // namespace pathprof::api
