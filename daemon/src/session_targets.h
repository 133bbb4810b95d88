// The processes a SessionTarget names (a pid, an executable name, a cgroup or a systemd unit),
// those the peer may trace only: a pid it may not is refused, other users' processes of the same
// name are left out and counted in the message when none is left. Errors name the target's fields
// after `prefix`: "" for the deprecated StartSessionRequest, "session.target." for CreateSession.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/daemon/config.h"
#include "pathprof/daemon/peer.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::daemon {

grpc::Status ResolveTargets(const Peer& peer, const v1::SessionTarget& target,
                            const std::string& prefix, const Limits& limits,
                            std::vector<uint32_t>* pids);

}  // namespace pathprof::daemon
