// The Unix-socket front door: pathprofd binds and accepts itself so it can read each peer's
// SO_PEERCRED, records it in the PeerRegistry, then gives the connected fd to gRPC
// (grpc::AddInsecureChannelFromFd). gRPC then names the call's peer "fd:N".
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "pathprof/core/status.h"
#include "pathprof/daemon/peer.h"

namespace grpc {
class Server;
}

namespace pathprof::daemon {

class UnixListener {
 public:
  ~UnixListener();
  // Creates the socket's directory, refuses to steal a socket another daemon still answers on,
  // binds with mode 0660 and group `group` (if it exists).
  Status Bind(const std::string& path, const std::string& group);
  // Accepts on a thread until Stop(); each connection is recorded in `peers` and handed to
  // `server`.
  void Start(grpc::Server* server, PeerRegistry* peers);
  void Stop();
  uint64_t accepted() const { return accepted_; }

 private:
  void Loop();
  std::string path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  grpc::Server* server_ = nullptr;
  PeerRegistry* peers_ = nullptr;
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
};

}  // namespace pathprof::daemon
