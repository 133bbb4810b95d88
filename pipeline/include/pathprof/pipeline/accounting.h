// Per-target accounting: what came in, what was dropped and why, what it cost. Everything the
// pipeline loses is counted here by reason, so `pathctl stats` and GetStats can show it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace pathprof::pipeline {

// Reasons are free-form short names ("queue_full", "broken_window:leaves_image", ...), so each
// stage can add its own without a central enum; the counts are what must never be missing.
class ReasonCounters {
 public:
  void Add(const std::string& reason, uint64_t n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[reason] += n;
  }
  std::map<std::string, uint64_t> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }
  uint64_t Total() const {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t t = 0;
    for (const auto& [k, v] : counts_) t += v;
    return t;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> counts_;
};

struct TargetAccounting {
  std::atomic<uint64_t> stack_samples{0};
  std::atomic<uint64_t> windows{0};
  std::atomic<uint64_t> branches{0};
  ReasonCounters drops;                      // data lost before it reached a profile
  ReasonCounters decode_errors;              // bytes that could not be turned into branches
  std::atomic<uint64_t> pipeline_cpu_ns{0};  // thread CPU time spent on this target
};

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), for charging work to a target.
uint64_t ThreadCpuNanos();

}  // namespace pathprof::pipeline
