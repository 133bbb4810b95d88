#include "pathprof/daemon/http2_guard.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "pathprof/daemon/http2_frame_scanner.h"

namespace pathprof::daemon {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 64 << 10;  // one read; also what a direction may hold unsent
constexpr int kRoundsPerTurn = 16;   // then the other connections get their turn
constexpr uint64_t kNotSettings = ~uint64_t{0};

bool WouldBlock() {
  return errno == EAGAIN || errno == EWOULDBLOCK;
}

}  // namespace

// One client: its socket, our end of gRPC's socketpair, and what the guard knows of the
// connection's frames until the acknowledgement.
struct Http2Guard::Connection {
  struct Direction {
    std::string pending;  // read, not yet taken by the other side
    size_t sent = 0;      // of pending
    bool eof = false;     // the source's end read
    uint64_t moved = 0;   // bytes written to the other side
  };
  uint64_t id = 0;
  int client = -1;
  int grpc = -1;
  Direction up, down;  // client -> gRPC, gRPC -> client
  Http2FrameScanner client_frames{true};
  Http2FrameScanner server_frames{false};
  bool acked = false;
  // Where the daemon's first frame (its SETTINGS) ends in its direction; 0 until read,
  // kNotSettings when the first frame was something else.
  uint64_t server_settings_end = 0;
  uint32_t streams = 0;      // opened before the acknowledgement
  uint32_t last_stream = 0;  // highest stream id the client opened
  Clock::time_point ack_deadline;
  int why = -1;  // the Reason the guard closes it for
};

const char* Http2Guard::ReasonName(Reason r) {
  switch (r) {
    case kStreamsBeforeAck:
      return "streams_before_settings_ack";
    case kAckTimeout:
      return "settings_ack_timeout";
    case kNotHttp2:
      return "not_http2";
    case kNoRelay:
      return "no_relay";
    default:
      return "unknown";
  }
}

Status Http2Guard::Start(Http2GuardLimits limits) {
  limits_ = limits;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0)
    return Error(ErrorCode::kIo, std::string("epoll_create1: ") + std::strerror(errno));
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_ < 0) return Error(ErrorCode::kIo, std::string("eventfd: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // connection ids start at 1
  if (epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0)
    return Error(ErrorCode::kIo, std::string("epoll_ctl: ") + std::strerror(errno));
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

Http2Guard::Http2Guard() = default;

Http2Guard::~Http2Guard() {
  if (thread_.joinable()) {
    stop_ = true;
    uint64_t one = 1;
    if (write(wake_, &one, sizeof one) < 0) { /* the loop also wakes within 200 ms */
    }
    thread_.join();
  }
  for (auto& c : incoming_) close(c->client), close(c->grpc);
  for (auto& [id, c] : connections_) close(c->client), close(c->grpc);
  if (epoll_ >= 0) close(epoll_);
  if (wake_ >= 0) close(wake_);
}

Result<int> Http2Guard::Adopt(int client) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    const int e = errno;
    close(client);
    ++closed_[kNoRelay];
    return Error(ErrorCode::kUnavailable, std::string("socketpair for the HTTP/2 guard: ") +
                                              std::strerror(e) + "; connection closed");
  }
  auto c = std::make_unique<Connection>();
  c->client = client;
  c->grpc = pair[0];
  c->ack_deadline = Clock::now() + limits_.ack_timeout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c->id = next_id_++;
    incoming_.push_back(std::move(c));
  }
  ++relayed_;
  uint64_t one = 1;
  if (write(wake_, &one, sizeof one) < 0) { /* already signalled: the counter is not full */
  }
  return pair[1];
}

void Http2Guard::TakeNew() {
  std::vector<std::unique_ptr<Connection>> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(incoming_);
  }
  for (auto& c : taken) {
    // Edge-triggered: Pump moves everything it can each time, so nothing needs re-arming. A
    // socket already readable when added is reported at once.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = c->id;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, c->client, &ev);
    epoll_ctl(epoll_, EPOLL_CTL_ADD, c->grpc, &ev);
    const uint64_t id = c->id;
    connections_[id] = std::move(c);
  }
}

void Http2Guard::Loop() {
  std::unique_ptr<char[]> scratch(new char[kChunk]);
  std::vector<uint64_t> busy, still_busy;
  epoll_event events[64];
  while (!stop_) {
    const int n = epoll_wait(epoll_, events, 64, busy.empty() ? 200 : 0);
    if (stop_) break;
    still_busy.clear();
    auto pump = [&](uint64_t id) {
      auto it = connections_.find(id);
      if (it == connections_.end()) return;  // closed earlier in this turn
      Connection* c = it->second.get();
      int rounds = 0;
      for (bool more = true; more && c->why < 0;) {
        if (++rounds > kRoundsPerTurn) {
          still_busy.push_back(id);
          return;
        }
        more = false;
        for (bool up : {true, false}) {
          Connection::Direction& d = up ? c->up : c->down;
          const int src = up ? c->client : c->grpc;
          const int dst = up ? c->grpc : c->client;
          bool ended = false;
          // What the other side did not take last time goes first.
          while (d.sent < d.pending.size()) {
            const ssize_t w = send(dst, d.pending.data() + d.sent, d.pending.size() - d.sent,
                                   MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
              d.sent += static_cast<size_t>(w);
              d.moved += static_cast<uint64_t>(w);
              more = true;
            } else if (w < 0 && errno == EINTR) {
              continue;
            } else {
              ended = !(w < 0 && WouldBlock());
              break;
            }
          }
          if (ended) {
            c->why = kReasons;  // a side is gone: close the other
            break;
          }
          if (d.sent < d.pending.size()) continue;  // still waiting on the other side
          if (!d.pending.empty()) std::string().swap(d.pending), d.sent = 0;
          if (d.eof) {
            if (!up) c->why = kReasons;  // gRPC closed and all it sent went out
            continue;
          }
          const ssize_t r = recv(src, scratch.get(), kChunk, MSG_DONTWAIT);
          if (r == 0) {
            d.eof = true;
            more = true;
            // The client half-closed: gRPC reads the end of its stream and closes, which
            // ends the other direction. gRPC's end closing ends the connection (above).
            if (up) shutdown(dst, SHUT_WR);
            continue;
          }
          if (r < 0) {
            if (errno == EINTR)
              more = true;
            else if (!WouldBlock())
              c->why = kReasons;
            continue;
          }
          more = true;
          if (!c->acked) Inspect(c, up, scratch.get(), static_cast<size_t>(r));
          if (c->why >= 0) break;
          size_t off = 0;
          while (off < static_cast<size_t>(r)) {
            const ssize_t w = send(dst, scratch.get() + off, static_cast<size_t>(r) - off,
                                   MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
              off += static_cast<size_t>(w);
              d.moved += static_cast<uint64_t>(w);
            } else if (w < 0 && errno == EINTR) {
              continue;
            } else {
              if (!(w < 0 && WouldBlock())) c->why = kReasons;
              break;
            }
          }
          if (c->why >= 0) break;
          if (off < static_cast<size_t>(r))
            d.pending.assign(scratch.get() + off, static_cast<size_t>(r) - off), d.sent = 0;
        }
      }
      if (c->why >= 0) Close(id);
    };
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) {
        uint64_t count;
        if (read(wake_, &count, sizeof count) < 0) { /* nothing new */
        }
        TakeNew();
        continue;
      }
      pump(events[i].data.u64);
    }
    for (uint64_t id : busy) pump(id);
    busy.swap(still_busy);
    // Unacknowledged past the deadline.
    const auto now = Clock::now();
    std::vector<uint64_t> late;
    for (auto& [id, c] : connections_)
      if (!c->acked && now >= c->ack_deadline) late.push_back(id);
    for (uint64_t id : late) {
      connections_[id]->why = kAckTimeout;
      Close(id);
    }
  }
}

void Http2Guard::Inspect(Connection* c, bool up, const char* data, size_t n) {
  if (!up) {
    if (c->server_settings_end != 0) return;
    c->server_frames.Feed(data, n, [c](const Http2FrameHeader& h) {
      c->server_settings_end =
          h.type == Http2FrameHeader::kSettings && !(h.flags & Http2FrameHeader::kAckFlag)
              ? h.end_offset
              : kNotSettings;
      return false;  // only the first frame matters
    });
    return;
  }
  const auto result = c->client_frames.Feed(data, n, [this, c](const Http2FrameHeader& h) {
    if (h.type == Http2FrameHeader::kSettings && (h.flags & Http2FrameHeader::kAckFlag) &&
        h.stream == 0) {
      // An acknowledgement sent before the daemon's SETTINGS went out acknowledges nothing
      // gRPC will enforce (it applies the settings it had sent when the ACK arrives).
      if (c->server_settings_end != 0 && c->server_settings_end != kNotSettings &&
          c->down.moved >= c->server_settings_end) {
        c->acked = true;
        return false;
      }
    } else if (h.type == Http2FrameHeader::kHeaders && (h.stream & 1) &&
               h.stream > c->last_stream) {
      c->last_stream = h.stream;
      if (++c->streams > limits_.streams_before_ack) {
        c->why = kStreamsBeforeAck;
        return false;
      }
    }
    return true;
  });
  if (result == Http2FrameScanner::Result::kBadPreface) c->why = kNotHttp2;
}

void Http2Guard::Close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection* c = it->second.get();
  if (c->why >= 0 && c->why < kReasons) ++closed_[c->why];
  // Shut down first: the client sees the end even if another process holds its socket, and
  // gRPC reads the end of its stream.
  shutdown(c->client, SHUT_RDWR);
  shutdown(c->grpc, SHUT_RDWR);
  close(c->client);
  close(c->grpc);
  connections_.erase(it);
  --relayed_;
}

}  // namespace pathprof::daemon
