// Pusher: the bounded, retrying queue between the daemon (which produces one window per period)
// and a fleet backend (Pyroscope, Parca). Enqueue never blocks the daemon; one worker thread
// sends, retrying transient failures with backoff. Every window that does not arrive is counted
// under exactly one reason in PushStats.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "pathprof/core/status.h"
#include "pathprof/fleet/backoff.h"
#include "pathprof/fleet/window.h"

namespace pathprof::fleet {

struct SendOutcome {
  enum class Kind {
    kOk,
    kRetryable,  // network error, timeout, HTTP 5xx/429/408, gRPC UNAVAILABLE and the like
    kPermanent,  // the backend refused this window (HTTP 4xx, gRPC INVALID_ARGUMENT, ...)
  };
  Kind kind = Kind::kOk;
  std::string message;  // what went wrong, for last_error
  static SendOutcome Ok() { return {}; }
};

// One backend protocol. Send is called from the pusher's worker thread only, one at a time.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual SendOutcome Send(const ProfileWindow& window) = 0;
  virtual std::string Describe() const = 0;  // e.g. "pyroscope http://host:4040"
};

struct PushOptions {
  size_t queue_capacity = 16;  // windows waiting; at least 1
  uint32_t max_attempts = 5;   // per window, first try included; at least 1
  BackoffOptions backoff;
  uint64_t jitter_seed = 0;  // 0: seeded from the clock
};

struct PushStats {
  uint64_t enqueued = 0;
  uint64_t sent = 0;
  uint64_t bytes_sent = 0;  // pprof bytes of the windows sent
  uint64_t attempts = 0;
  uint64_t retries = 0;
  // Dropped windows, one reason each; enqueued == sent + sum(dropped_*) + queued + in flight.
  uint64_t dropped_invalid = 0;            // failed ValidateWindow at Enqueue
  uint64_t dropped_queue_full = 0;         // the oldest queued window, pushed out by a new one
  uint64_t dropped_retries_exhausted = 0;  // max_attempts transient failures
  uint64_t dropped_rejected = 0;           // the backend said no for good
  uint64_t dropped_shutdown = 0;           // still queued (or retrying) when Stop's drain ended
  std::string last_error;
};

class Pusher {
 public:
  // Starts the worker thread. Fails on a null sink or options out of range.
  static Result<std::unique_ptr<Pusher>> Start(std::unique_ptr<Sink> sink, PushOptions options);
  ~Pusher();  // Stop(0)
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  // Queues the window (moved, not copied). When the queue is full the OLDEST queued window is
  // dropped (counted in dropped_queue_full): in continuous mode the newest data is worth most.
  // Returns kInvalidArgument (and counts dropped_invalid) for an unusable window.
  Status Enqueue(ProfileWindow window);

  // Blocks until the queue is empty and nothing is in flight (or `timeout` passes); true if idle.
  bool WaitIdle(std::chrono::milliseconds timeout);

  // Lets the worker finish what is queued for up to `drain`, then stops it; what is left (queued,
  // or waiting out a retry backoff, which is cut short) is counted in dropped_shutdown. A Send
  // already on the wire is not interrupted: it ends within the sink's own timeout. Idempotent.
  void Stop(std::chrono::milliseconds drain);

  PushStats stats() const;
  size_t queued() const;
  const Sink& sink() const { return *sink_; }

 private:
  Pusher(std::unique_ptr<Sink> sink, PushOptions options);
  void Run();

  std::unique_ptr<Sink> sink_;
  PushOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // worker: new work or stop
  std::condition_variable idle_;  // WaitIdle
  std::deque<ProfileWindow> queue_;
  bool in_flight_ = false;
  bool stopping_ = false;  // no more sleeping between retries; drain deadline set
  bool abandon_ = false;   // drain deadline passed: drop everything
  std::chrono::steady_clock::time_point drain_deadline_{};
  PushStats stats_;
  std::thread worker_;
};

}  // namespace pathprof::fleet
