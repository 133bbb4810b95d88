// Who is calling. On the Unix socket: the kernel's SO_PEERCRED and SO_PEERGROUPS, the
// credentials the client had when it connected, recorded when pathprofd accepted the connection
// (gRPC's C++ API does not expose them, so the daemon accepts connections itself and hands each
// fd to gRPC). Never /proc/PID of the connecting pid: that process may have exited and its pid
// gone to another process by the time the daemon looks. Over TCP: the verified TLS client
// identity mapped through the config.
#pragma once

#include <sys/types.h>

#include <chrono>
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
  std::vector<uint32_t> groups;  // supplementary groups of the peer at connect time
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
// only trusts an entry while its own call is still alive (see Authorizer::Identify).
//
// Each entry also holds a duplicate of the connection's socket, so that the daemon can shut a
// connection down (gRPC then closes it and frees its streams) without racing gRPC's close of
// its own fd and a reuse of the number; and it counts the connection's calls in handlers, so
// that a connection whose only streams never sent a request counts as idle.
class PeerRegistry {
 public:
  PeerRegistry() = default;
  PeerRegistry(const PeerRegistry&) = delete;
  PeerRegistry& operator=(const PeerRegistry&) = delete;
  ~PeerRegistry();
  void Record(int fd, Peer peer);
  std::optional<Peer> Find(int fd) const;
  size_t size() const;
  // Connections recorded for `client_key` and not yet seen closed (Prune makes it exact).
  size_t CountFor(const std::string& client_key) const;
  // Drops entries whose fd no longer refers to a socket we accepted (closed by gRPC), closing
  // their duplicates; returns how many.
  size_t Prune();
  // A call of the connection on `fd` entered a handler, or left it.
  void CallStarted(int fd);
  void CallEnded(int fd);
  // Shuts down every connection that has had no call in a handler for `idle` (since it was
  // accepted or since its last call ended); returns how many.
  size_t ShutDownIdle(std::chrono::steady_clock::duration idle);

 private:
  struct Entry {
    Peer peer;
    uint64_t inode = 0;  // of the socket, to tell a reused fd from the original
    int own_fd = -1;     // our duplicate of the socket (closed with the entry)
    uint32_t calls = 0;  // calls in a handler now
    std::chrono::steady_clock::time_point last_active;
    bool shut_down = false;
  };
  void EraseLocked(std::map<int, Entry>::iterator it);
  mutable std::mutex mu_;
  std::map<int, Entry> by_fd_;
  std::map<std::string, size_t> per_client_;
};

// The Unix socket's connection bounds (limits.max_connections*, admin_reserved_connections,
// guaranteed_connections_per_client, idle_connection_timeout_s): a connection over them is
// closed at once, before gRPC sees it, and counted.
struct ConnectionLimits {
  size_t total = 4096;        // lowered to FdBoundConnections() by EffectiveTotal
  size_t per_client = 64;     // non-admins only
  size_t admin_reserve = 64;  // of total: the last ones are for admins
  // A client holding fewer than this is admitted past the other bounds (never past the fd one).
  size_t guaranteed_per_client = 2;
  std::chrono::seconds idle_timeout{60};
  std::string admin_group;  // who is an admin (IsAdmin)
  // limits.max_streams_per_connection: before a client acknowledges the SETTINGS announcing
  // it, the HTTP/2 guard enforces it (http2_guard.h); and the time it gives the client to
  // acknowledge (at most idle_timeout).
  uint32_t streams_before_ack = 100;
  std::chrono::seconds settings_ack_timeout{10};
};
// The most connections the fd limit allows: each holds four descriptors (the client's socket
// and the HTTP/2 guard's end of the socketpair, gRPC's end and the registry's duplicate of it),
// and half the descriptors stay for sessions.
size_t FdBoundConnections();
// `total` lowered to FdBoundConnections().
size_t EffectiveTotal(size_t total);

// Supplementary groups of the peer of a connected Unix socket, as they were when it connected
// (SO_PEERGROUPS); empty where the kernel does not report them (before Linux 4.13).
std::vector<uint32_t> PeerGroups(int fd);
// Group name -> gid; nullopt if no such group.
std::optional<uint32_t> GroupId(const std::string& name);
// Root, or a member (primary or supplementary) of `admin_group`.
bool IsAdmin(const Peer& peer, const std::string& admin_group);

}  // namespace pathprof::daemon
