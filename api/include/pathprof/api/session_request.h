// A StartSessionRequest's settings as a pipeline::SessionConfig, for the daemon's StartSession:
// every field checked against the server's bounds (a negative count, or one above its bound,
// refused naming the field and the pathprofd.toml key), and 0 or unset keeping the pipeline's
// default. The targets, the owner and the quotas are the caller's: they need the peer.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <limits>

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

// Fills everything in `out` but pids, owner_uid and confine_to_uid; OK, or INVALID_ARGUMENT
// with an ErrorInfo naming the field.
grpc::Status ToSessionSettings(const v1::StartSessionRequest& req, const SessionBounds& bounds,
                               pipeline::SessionConfig* out);

}  // namespace pathprof::api
