// Where a client finds pathprofd's Unix socket when the user named none: $PATHPROF_SOCKET, else
// the packaged daemon's path. Every client (pathctl, pathtop) asks here, so that one variable
// points them all at a test or personal daemon, as DOCKER_HOST does for docker's clients.
#pragma once

#include <string>

namespace pathprof::api {

inline constexpr const char* kDefaultDaemonSocket = "/run/pathprof/pathprofd.sock";
inline constexpr const char* kDaemonSocketVariable = "PATHPROF_SOCKET";

// `flag` (--socket) when given, else $PATHPROF_SOCKET when set and not empty, else
// kDefaultDaemonSocket.
std::string DaemonSocketPath(const std::string& flag);

// True when $PATHPROF_SOCKET names a socket (set and not empty).
bool DaemonSocketFromEnvironment();

}  // namespace pathprof::api
