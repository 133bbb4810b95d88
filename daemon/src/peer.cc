#include "pathprof/daemon/peer.h"

#include <sys/resource.h>

#include <grp.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "pathprof/core/procfs.h"

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

void PeerRegistry::Record(int fd, Peer peer) {
  std::lock_guard<std::mutex> lock(mu_);
  // The fd number may be a closed connection's, reused: that one is gone.
  if (auto old = by_fd_.find(fd); old != by_fd_.end()) EraseLocked(old);
  ++per_client_[peer.client_key()];
  by_fd_[fd] = Entry{std::move(peer), SocketInode(fd)};
}

void PeerRegistry::EraseLocked(std::map<int, Entry>::iterator it) {
  auto count = per_client_.find(it->second.peer.client_key());
  if (count != per_client_.end() && --count->second == 0) per_client_.erase(count);
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

void PeerRegistry::Prune() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    auto next = std::next(it);
    if (SocketInode(it->first) != it->second.inode) EraseLocked(it);
    it = next;
  }
}

size_t EffectiveTotal(size_t total) {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) != 0 || fds.rlim_cur == RLIM_INFINITY) return total;
  return std::min<size_t>(total, static_cast<size_t>(fds.rlim_cur / 2));
}

std::vector<uint32_t> ProcessGroups(int pid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  if (!status.ok()) return {};
  return std::vector<uint32_t>(status->groups.begin(), status->groups.end());
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
