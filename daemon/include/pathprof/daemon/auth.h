// Authorization: who the caller is (PeerRegistry for the Unix socket, the verified TLS identity
// for TCP) and what it may see. Root, members of the admin group and TLS identities mapped to
// uid 0 see everything; anyone else sees and profiles only processes it owns.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pathprof/daemon/config.h"
#include "pathprof/daemon/peer.h"

namespace pathprof::daemon {

// The uid owning /proc/PID, or nullopt if there is no such process.
std::optional<uint32_t> ProcessOwner(uint32_t pid);

class Authorizer {
 public:
  explicit Authorizer(const PeerRegistry* peers) : peers_(peers) {}
  void Configure(const DaemonConfig& config);

  // The caller of this call, with `admin` decided by the current config. UNAUTHENTICATED when
  // the connection is unknown (or closed and its fd reused) or a TLS identity is not listed.
  grpc::Status Identify(grpc::ServerContext* context, Peer* out) const;

  // OK, PERMISSION_DENIED "pid 123 belongs to uid 1000", or NOT_FOUND "no process 123".
  static grpc::Status CheckPid(const Peer& peer, uint32_t pid);
  // Whether the caller may see kernel addresses and symbols: admins always; others as the host
  // shows them to an unprivileged user in /proc/kallsyms and perf (kptr_restrict 0 and
  // perf_event_paranoid <= 1). Read at each call, so a sysctl change applies at once.
  static bool KernelAddressesVisible(const Peer& peer);
  static bool MaySee(const Peer& peer, uint32_t owner_uid) {
    return peer.admin || peer.uid == owner_uid;
  }

 private:
  const PeerRegistry* peers_;
  mutable std::mutex mu_;
  std::string admin_group_;
  std::vector<TlsIdentity> identities_;
};

}  // namespace pathprof::daemon
