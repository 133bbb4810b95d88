#include "pathprof/daemon/peer.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "pathprof/daemon/log.h"

namespace pathprof::daemon {
namespace {
uint64_t SocketInode(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return st.st_ino;
}
}  // namespace

std::string Peer::Describe() const {
  if (!tls_identity.empty())
    return "tls identity " + tls_identity + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid) + " pid " + std::to_string(pid);
}

PeerRegistry::~PeerRegistry() {
  for (auto& [fd, e] : by_fd_)
    if (e.own_fd >= 0) close(e.own_fd);
}

void PeerRegistry::Record(int fd, Peer peer) {
  // Duplicated before gRPC owns `fd`: from here the socket lives until both are closed.
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  std::lock_guard<std::mutex> lock(mu_);
  // The fd number may be a closed connection's, reused: that one is gone.
  if (auto old = by_fd_.find(fd); old != by_fd_.end()) EraseLocked(old);
  ++per_client_[peer.client_key()];
  by_fd_[fd] = Entry{.peer = std::move(peer),
                     .inode = SocketInode(fd),
                     .own_fd = own,
                     .last_active = std::chrono::steady_clock::now()};
}

void PeerRegistry::EraseLocked(std::map<int, Entry>::iterator it) {
  auto count = per_client_.find(it->second.peer.client_key());
  if (count != per_client_.end() && --count->second == 0) per_client_.erase(count);
  if (it->second.own_fd >= 0) close(it->second.own_fd);
  by_fd_.erase(it);
}

size_t PeerRegistry::CountFor(const std::string& client_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_client_.find(client_key);
  return it == per_client_.end() ? 0 : it->second;
}

std::optional<Peer> PeerRegistry::Find(int fd) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  // The fd may have been closed and reused for something else since it was recorded.
  if (it->second.inode == 0 || SocketInode(fd) != it->second.inode) return std::nullopt;
  return it->second.peer;
}

size_t PeerRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_fd_.size();
}

size_t PeerRegistry::Prune() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t pruned = 0;
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    auto next = std::next(it);
    if (SocketInode(it->first) != it->second.inode) {
      EraseLocked(it);
      ++pruned;
    }
    it = next;
  }
  return pruned;
}

void PeerRegistry::CallStarted(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_fd_.find(fd); it != by_fd_.end()) ++it->second.calls;
}

void PeerRegistry::CallEnded(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end() || it->second.calls == 0) return;
  --it->second.calls;
  it->second.last_active = std::chrono::steady_clock::now();
}

size_t PeerRegistry::ShutDownIdle(std::chrono::steady_clock::duration idle) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  size_t shut = 0;
  for (auto& [fd, e] : by_fd_) {
    if (e.shut_down || e.calls > 0 || now - e.last_active < idle || e.own_fd < 0) continue;
    // On our duplicate: the socket itself, whatever gRPC has done with its fd number. gRPC
    // reads the end of the stream, fails the connection's streams and closes its fd.
    shutdown(e.own_fd, SHUT_RDWR);
    e.shut_down = true;
    ++shut;
  }
  return shut;
}

size_t FdBoundConnections() {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) != 0 || fds.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return static_cast<size_t>(fds.rlim_cur / 8);
}

size_t EffectiveTotal(size_t total) {
  return std::min(total, FdBoundConnections());
}

std::vector<uint32_t> PeerGroups(int fd) {
  std::vector<gid_t> groups(64);
  int error = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      return std::vector<uint32_t>(groups.begin(), groups.end());
    }
    error = errno;
    if (error != ERANGE) break;
    groups.resize(len / sizeof(gid_t) + 1);  // the kernel said how many it has
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    Log(kLogWarning,
        "SO_PEERGROUPS: %s; clients' supplementary groups are unknown, so admin_group "
        "membership counts only as a primary group",
        std::strerror(error));
  return {};
}

std::optional<uint32_t> GroupId(const std::string& name) {
  if (name.empty()) return std::nullopt;
  struct group grp, *result = nullptr;
  char buf[16384];
  if (getgrnam_r(name.c_str(), &grp, buf, sizeof buf, &result) != 0 || !result) return std::nullopt;
  return result->gr_gid;
}

bool IsAdmin(const Peer& peer, const std::string& admin_group) {
  if (peer.tls_identity.empty() && peer.uid == 0) return true;
  if (!peer.tls_identity.empty()) return peer.uid == 0;
  auto gid = GroupId(admin_group);
  if (!gid) return false;
  return peer.gid == *gid ||
         std::find(peer.groups.begin(), peer.groups.end(), *gid) != peer.groups.end();
}

}  // namespace pathprof::daemon
