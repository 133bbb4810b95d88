// A relay in front of gRPC for each Unix-socket connection, until the client acknowledges the
// daemon's SETTINGS. gRPC 1.51 applies the MAX_CONCURRENT_STREAMS it announces only once the
// client has acknowledged them, so a client that never sends the acknowledgement could open
// streams without bound (each holds memory gRPC keeps). The guard gives gRPC one end of a
// socketpair and moves bytes between it and the client's socket from one epoll thread for every
// connection. In the client's direction it reads frame headers only: before the client's SETTINGS
// ACK (counted only once the daemon's SETTINGS went out), a connection whose client opens more
// streams than the bound, or that does not acknowledge in time, or that does not start with the
// HTTP/2 preface, is closed (both ends: gRPC reads the end of its stream) and counted by reason.
// After the acknowledgement it only relays, gRPC's own bound applies. Each direction keeps at
// most one read's bytes (64 KiB) that the other side has not taken yet, and reads no more until
// it has.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::daemon {

struct Http2GuardLimits {
  // limits.max_streams_per_connection: the bound the daemon's SETTINGS announce.
  uint32_t streams_before_ack = 100;
  std::chrono::milliseconds ack_timeout{10000};
};

class Http2Guard {
 public:
  // Why the guard closed a connection.
  enum Reason { kStreamsBeforeAck, kAckTimeout, kNotHttp2, kNoRelay, kReasons };
  static const char* ReasonName(Reason r);

  Http2Guard();
  Http2Guard(const Http2Guard&) = delete;
  Http2Guard& operator=(const Http2Guard&) = delete;
  // Closes every relayed connection (gRPC then sees each end).
  ~Http2Guard();
  Status Start(Http2GuardLimits limits);
  // Takes the accepted, non-blocking `client` socket; returns the non-blocking socket to give
  // gRPC in its place. On failure (no descriptors left) closes `client`, counts kNoRelay and
  // returns an error.
  Result<int> Adopt(int client);
  uint64_t closed(Reason r) const { return closed_[r]; }
  // Connections relayed now.
  size_t relayed() const { return relayed_; }

 private:
  struct Connection;
  void Loop();
  void TakeNew();
  // Reads frame headers in `n` bytes just read (`up`: from the client) until the
  // acknowledgement; sets the connection's reason to close where it broke a rule.
  void Inspect(Connection* c, bool up, const char* data, size_t n);
  // Closes both ends; counts the reason when the guard chose to close.
  void Close(uint64_t id);
  Http2GuardLimits limits_;
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: new connections, or stop
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> incoming_;                      // under mu_
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;  // the loop's own
  uint64_t next_id_ = 1;                                                   // under mu_
  std::atomic<size_t> relayed_{0};
  std::atomic<uint64_t> closed_[kReasons] = {};
};

}  // namespace pathprof::daemon
