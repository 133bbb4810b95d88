// The Unix-socket front door: pathprofd binds and accepts itself so it can read each peer's
// SO_PEERCRED and SO_PEERGROUPS, records them in the PeerRegistry, then gives the connected fd to
// gRPC (grpc::AddInsecureChannelFromFd) through the HTTP/2 guard (http2_guard.h): gRPC gets the
// guard's end of a socketpair, and the peer is recorded under that fd, which gRPC then names as
// the call's peer "fd:N". Once a second
// the same thread shuts down the connections idle past limits.idle_connection_timeout_s and
// hands the memory of closed ones back to the system.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "pathprof/core/status.h"
#include "pathprof/daemon/http2_guard.h"
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
  // Accepts on a thread until Stop(); each connection within `limits` is recorded in `peers`
  // and handed to `server`, the others are closed at once and counted. The calls of each
  // connection are counted in `peers` by the server (ConnectionActivity) for the idle timeout.
  void Start(grpc::Server* server, PeerRegistry* peers, ConnectionLimits limits = {});
  void Stop();
  uint64_t accepted() const { return accepted_; }
  // Connections closed unserved: over the per-client bound, or over the non-admins' share.
  uint64_t refused_per_client() const { return refused_per_client_; }
  uint64_t refused_total() const { return refused_total_; }
  // Connections shut down for having no call in a handler for the idle timeout.
  uint64_t idle_shut_down() const { return idle_shut_down_; }
  // Connections the HTTP/2 guard closed, by reason (Http2Guard::Reason).
  uint64_t guard_closed(Http2Guard::Reason r) const { return guard_.closed(r); }

 private:
  void Loop();
  void Accept();
  // Shuts down idle connections; forgets closed ones and trims the heap when there were some.
  void Sweep();
  // Empty when `p` may hold one more connection; else why not.
  std::string OverLimit(const Peer& p);
  std::string path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  grpc::Server* server_ = nullptr;
  PeerRegistry* peers_ = nullptr;
  ConnectionLimits limits_;
  size_t hard_total_ = SIZE_MAX;  // FdBoundConnections(): no connection past it, admins' either
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_per_client_{0};
  std::atomic<uint64_t> refused_total_{0};
  std::atomic<uint64_t> idle_shut_down_{0};
  std::chrono::steady_clock::time_point last_prune_{};
  // Last: its destructor closes the relayed connections after the server has shut down.
  Http2Guard guard_;
};

}  // namespace pathprof::daemon
