#include "pathprof/daemon/unix_listener.h"

#include <fcntl.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pathprof/daemon/log.h"

namespace pathprof::daemon {
namespace {

Status Errno(const std::string& what) {
  int e = errno;
  return Error(e == EACCES || e == EPERM ? ErrorCode::kPermission : ErrorCode::kIo,
               what + ": " + std::strerror(e));
}

bool FillAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size());
  return true;
}

}  // namespace

UnixListener::~UnixListener() {
  Stop();
}

Status UnixListener::Bind(const std::string& path, const std::string& group) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr))
    return Error(ErrorCode::kInvalidArgument, "socket path too long (max 107 bytes): " + path);
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error(ErrorCode::kIo, "cannot create " + dir.string() + ": " + ec.message());
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Error(ErrorCode::kInvalidArgument,
                   path + " exists and is not a socket; remove it or choose --socket");
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (live)
      return Error(ErrorCode::kUnavailable,
                   "another pathprofd already answers on " + path + "; stop it first");
    unlink(path.c_str());  // a stale socket from a daemon that did not exit cleanly
  }
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Errno("socket(AF_UNIX)");
  // Created 0600 and widened after chown, so there is no moment where the wrong group can connect.
  mode_t old = umask(0177);
  int rc = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old);
  if (rc != 0) return Errno("bind " + path);
  if (auto gid = GroupId(group)) {
    if (chown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0) return Errno("chown " + path);
  } else if (!group.empty()) {
    Log(kLogWarning, "socket group '%s' does not exist: %s is usable by root only", group.c_str(),
        path.c_str());
  }
  if (chmod(path.c_str(), 0660) != 0) return Errno("chmod " + path);
  if (listen(fd_, 256) != 0) return Errno("listen " + path);
  if (pipe2(wake_, O_CLOEXEC) != 0) return Errno("pipe2");
  path_ = path;
  return Status::Ok();
}

void UnixListener::Start(grpc::Server* server, PeerRegistry* peers, ConnectionLimits limits) {
  server_ = server;
  peers_ = peers;
  limits_ = limits;
  hard_total_ = FdBoundConnections();
  limits_.total = EffectiveTotal(limits_.total);
  limits_.admin_reserve = std::min(limits_.admin_reserve, limits_.total / 2);
  Http2GuardLimits guard;
  guard.streams_before_ack = limits_.streams_before_ack;
  guard.ack_timeout = limits_.idle_timeout.count() > 0
                          ? std::min(limits_.settings_ack_timeout, limits_.idle_timeout)
                          : limits_.settings_ack_timeout;
  if (Status s = guard_.Start(guard); !s.ok())
    Log(kLogError, "HTTP/2 guard: %s; connections are refused", s.message().c_str());
  thread_ = std::thread([this] { Loop(); });
}

void UnixListener::Loop() {
  auto last_sweep = std::chrono::steady_clock::now();
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int ready = poll(fds, 2, 1000);
    if (ready < 0 && errno != EINTR) {
      Log(kLogError, "poll on %s: %s", path_.c_str(), std::strerror(errno));
      return;
    }
    if (ready > 0 && fds[1].revents) return;
    if (std::chrono::steady_clock::now() - last_sweep >= std::chrono::seconds(1)) {
      last_sweep = std::chrono::steady_clock::now();
      Sweep();
    }
    if (ready > 0 && fds[0].revents) Accept();
  }
}

void UnixListener::Sweep() {
  const size_t shut = peers_->ShutDownIdle(limits_.idle_timeout);
  if (shut > 0) Log(kLogDebug, "%zu idle connection(s) shut down", shut);
  idle_shut_down_ += shut;
  // A closed connection's streams are freed, but the allocator keeps the pages it took for them
  // (thousands of streams: gigabytes) unless asked to give them back.
  if (peers_->Prune() > 0) malloc_trim(0);
}

void UnixListener::Accept() {
  // gRPC expects a non-blocking fd (it polls it; a blocking read would hang its poller).
  int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (c < 0) {
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      Log(kLogWarning, "accept on %s: %s", path_.c_str(), std::strerror(errno));
      if (errno == EMFILE || errno == ENFILE) usleep(100000);  // let connections drain
    }
    return;
  }
  // The credentials the client had when it connected, kept by the kernel with the socket.
  ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    Log(kLogWarning, "SO_PEERCRED: %s; connection refused", std::strerror(errno));
    close(c);
    return;
  }
  Peer p;
  p.uid = cred.uid;
  p.gid = cred.gid;
  p.pid = cred.pid;
  p.groups = PeerGroups(c);
  if (std::string why = OverLimit(p); !why.empty()) {
    // Closed before gRPC sees it: the client's call fails with UNAVAILABLE at once. Logged at
    // debug only: a flood must not become a flood of log lines.
    Log(kLogDebug, "connection from uid %u pid %d refused: %s", cred.uid, cred.pid, why.c_str());
    close(c);
    return;
  }
  // gRPC gets the guard's end of a socketpair, and the peer is recorded under that fd: it is
  // the one gRPC names ("fd:N") and the one the idle timeout shuts down.
  auto relayed = guard_.Adopt(c);
  if (!relayed.ok()) {
    Log(kLogWarning, "connection from uid %u pid %d: %s", cred.uid, cred.pid,
        relayed.status().message().c_str());
    return;
  }
  const int g = relayed.value();
  peers_->Record(g, p);
  ++accepted_;
  Log(kLogDebug, "connection fd %d (relayed from fd %d) from uid %u pid %d", g, c, cred.uid,
      cred.pid);
  grpc::AddInsecureChannelFromFd(server_, g);  // gRPC owns (and closes) the fd from here
  if ((accepted_ & 255) == 0) peers_->Prune();
}

std::string UnixListener::OverLimit(const Peer& p) {
  enum Why { kRoom, kPerClient, kTotal, kAdminReserve, kFdBound };
  // Counts go stale as gRPC closes connections; pruning reads every fd, so it runs only when a
  // bound is reached and at most every 100 ms.
  auto over = [&](bool admin) {
    const size_t total = peers_->size();
    const size_t mine = peers_->CountFor(p.client_key());
    if (total >= hard_total_) return kFdBound;
    // Room for every user at the caps: those who filled them cannot lock another user out.
    if (mine < limits_.guaranteed_per_client) return kRoom;
    if (total >= limits_.total) return kTotal;
    if (admin) return kRoom;
    if (mine >= limits_.per_client) return kPerClient;
    if (total >= limits_.total - limits_.admin_reserve) return kAdminReserve;
    return kRoom;
  };
  // The admin group is looked up only for a connection that needs the reserve: root is known
  // from the uid.
  bool admin = p.uid == 0;
  Why why = over(admin);
  const auto now = std::chrono::steady_clock::now();
  if (why != kRoom && now - last_prune_ > std::chrono::milliseconds(100)) {
    last_prune_ = now;
    peers_->Prune();
    why = over(admin);
  }
  if ((why == kPerClient || why == kAdminReserve) && IsAdmin(p, limits_.admin_group))
    why = over(true);
  switch (why) {
    case kPerClient:
      ++refused_per_client_;
      return "uid " + std::to_string(p.uid) + " holds " + std::to_string(limits_.per_client) +
             " connections (limits.max_connections_per_client)";
    case kTotal:
      ++refused_total_;
      return std::to_string(limits_.total) + " connections are open (limits.max_connections)";
    case kAdminReserve:
      ++refused_total_;
      return "the last " + std::to_string(limits_.admin_reserve) +
             " connections are for admins (limits.admin_reserved_connections)";
    case kFdBound:
      ++refused_total_;
      return std::to_string(hard_total_) + " connections are open (a quarter of the fd limit)";
    default:
      return {};
  }
}

void UnixListener::Stop() {
  if (thread_.joinable()) {
    char b = 1;
    if (write(wake_[1], &b, 1) < 0) { /* the loop also ends when fd_ closes */
    }
    thread_.join();
  }
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
    unlink(path_.c_str());
  }
  for (int& w : wake_)
    if (w >= 0) close(w), w = -1;
}

}  // namespace pathprof::daemon
