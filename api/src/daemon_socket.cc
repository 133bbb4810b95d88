#include "pathprof/api/daemon_socket.h"

#include <cstdlib>

namespace pathprof::api {

bool DaemonSocketFromEnvironment() {
  const char* env = std::getenv(kDaemonSocketVariable);
  return env != nullptr && *env != '\0';
}

std::string DaemonSocketPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (DaemonSocketFromEnvironment()) return std::getenv(kDaemonSocketVariable);
  return kDefaultDaemonSocket;
}

}  // namespace pathprof::api
