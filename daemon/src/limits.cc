#include "pathprof/daemon/limits.h"

#include <algorithm>

namespace pathprof::daemon {

bool TokenBucket::Take(std::chrono::steady_clock::time_point now, double* retry_after_ms) {
  double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    last_ = now;
  }
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  if (retry_after_ms) *retry_after_ms = (1 - tokens_) / rate_ * 1000;
  return false;
}

void TokenBucket::Reconfigure(double rate, double burst) {
  rate_ = rate;
  burst_ = burst;
  tokens_ = std::min(tokens_, burst_);
}

bool RateLimiter::Allow(const std::string& client, double* retry_after_ms) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if ((++calls_ & 1023) == 0) {
    // A bucket idle long enough to have refilled completely carries no state worth keeping.
    auto idle = std::chrono::duration<double>(burst_ / rate_ + 1.0);
    for (auto it = last_seen_.begin(); it != last_seen_.end();) {
      if (now - it->second > idle) {
        buckets_.erase(it->first);
        it = last_seen_.erase(it);
      } else {
        ++it;
      }
    }
  }
  auto it = buckets_.find(client);
  if (it == buckets_.end()) it = buckets_.emplace(client, TokenBucket(rate_, burst_, now)).first;
  last_seen_[client] = now;
  if (it->second.Take(now, retry_after_ms)) return true;
  ++refused_;
  return false;
}

void RateLimiter::Reconfigure(double rate, double burst) {
  std::lock_guard<std::mutex> lock(mu_);
  rate_ = rate;
  burst_ = burst;
  for (auto& [k, b] : buckets_) b.Reconfigure(rate, burst);
}

uint64_t RateLimiter::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

bool QuotaCounter::Acquire(const std::string& client, uint32_t per_client_max, uint32_t total_max,
                           uint32_t admin_reserve, bool admin) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t bound = admin ? total_max : total_max - std::min(admin_reserve, total_max);
  uint32_t& mine = per_client_[client];
  if (mine >= per_client_max || total_ >= bound) {
    if (mine == 0) per_client_.erase(client);
    return false;
  }
  ++mine;
  ++total_;
  return true;
}

void QuotaCounter::Release(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  if (--it->second == 0) per_client_.erase(it);
  --total_;
}

uint32_t QuotaCounter::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace pathprof::daemon
