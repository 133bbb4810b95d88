// Who is calling. On the Unix socket: the kernel's SO_PEERCRED, recorded when pathprofd accepted
// the connection (gRPC's C++ API does not expose it, so the daemon accepts connections itself and
// hands each fd to gRPC). Over TCP: the verified TLS client identity mapped through the config.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace grpc {
class ServerContext;
class ServerContextBase;
}  // namespace grpc

namespace pathprof::daemon {

struct DaemonConfig;

struct Peer {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  std::vector<uint32_t> groups;  // supplementary groups of the peer process at connect time
  std::string tls_identity;      // set for TCP peers
  bool admin = false;            // root, admin group, or a TLS identity mapped to uid 0
  // Rate limits, session and stream quotas are per client: "uid:1000" or "tls:collector".
  std::string client_key() const {
    return tls_identity.empty() ? "uid:" + std::to_string(uid) : "tls:" + tls_identity;
  }
  std::string Describe() const;
};

// fd -> credentials of the connection accepted on that fd. An fd number is reused after gRPC
// closes a connection; Record() for the new connection overwrites the old entry, and a handler
// only trusts an entry while its own call is still alive (see PeerOf in auth.h).
class PeerRegistry {
 public:
  void Record(int fd, Peer peer);
  std::optional<Peer> Find(int fd) const;
  size_t size() const;
  // Connections recorded for `client_key` and not yet seen closed (Prune makes it exact).
  size_t CountFor(const std::string& client_key) const;
  // Drops entries whose fd no longer refers to a socket we accepted (closed by gRPC).
  void Prune();

 private:
  struct Entry {
    Peer peer;
    uint64_t inode = 0;  // of the socket, to tell a reused fd from the original
  };
  void EraseLocked(std::map<int, Entry>::iterator it);
  mutable std::mutex mu_;
  std::map<int, Entry> by_fd_;
  std::map<std::string, size_t> per_client_;
};

// The Unix socket's connection bounds (limits.max_connections*, admin_reserved_connections):
// a connection over them is closed at once, before gRPC sees it, and counted.
struct ConnectionLimits {
  size_t total = 4096;        // lowered to the fd limit less a margin by EffectiveTotal
  size_t per_client = 64;     // non-admins only
  size_t admin_reserve = 64;  // of total: the last ones are for admins
  std::string admin_group;    // who is an admin (IsAdmin)
};
// `total` lowered so that connections leave file descriptors for sessions (half the soft fd
// limit at most).
size_t EffectiveTotal(size_t total);

// Supplementary groups of `pid` from /proc/PID/status (empty if it is gone).
std::vector<uint32_t> ProcessGroups(int pid);
// Group name -> gid; nullopt if no such group.
std::optional<uint32_t> GroupId(const std::string& name);
// Root, or a member (primary or supplementary) of `admin_group`.
bool IsAdmin(const Peer& peer, const std::string& admin_group);

}  // namespace pathprof::daemon
