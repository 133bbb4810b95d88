// Quotas and rate limits per client, so one client (a misbehaving scheduler loop, a runaway
// script) cannot starve the others or exhaust the daemon. Request-size checks live in
// request_checks.h; this file holds what has state.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace pathprof::daemon {

// A token bucket: `rate` tokens per second up to `burst`; each request takes one.
class TokenBucket {
 public:
  TokenBucket(double rate, double burst, std::chrono::steady_clock::time_point now)
      : rate_(rate), burst_(burst), tokens_(burst), last_(now) {}
  // Takes a token if there is one; otherwise returns false and sets *retry_after_ms.
  bool Take(std::chrono::steady_clock::time_point now, double* retry_after_ms);
  void Reconfigure(double rate, double burst);

 private:
  double rate_, burst_, tokens_;
  std::chrono::steady_clock::time_point last_;
};

// One bucket per client key; idle buckets are forgotten after a while so the map stays small.
class RateLimiter {
 public:
  RateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}
  bool Allow(const std::string& client, double* retry_after_ms);
  void Reconfigure(double rate, double burst);
  uint64_t refused() const;

 private:
  mutable std::mutex mu_;
  double rate_, burst_;
  std::map<std::string, TokenBucket> buckets_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_seen_;
  uint64_t refused_ = 0;
  uint64_t calls_ = 0;
};

// Counts held per client and in total (streams); Acquire fails when either bound is reached.
// The last `admin_reserve` of `total_max` are for admins: a non-admin is refused once
// total_max - admin_reserve are held.
class QuotaCounter {
 public:
  bool Acquire(const std::string& client, uint32_t per_client_max, uint32_t total_max,
               uint32_t admin_reserve = 0, bool admin = false);
  void Release(const std::string& client);
  uint32_t total() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint32_t> per_client_;
  uint32_t total_ = 0;
};

}  // namespace pathprof::daemon
