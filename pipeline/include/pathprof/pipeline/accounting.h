// Per-target accounting: what came in, what was dropped and why, what it cost. Everything the
// pipeline loses is counted here by reason, so `pathctl stats` and GetStats can show it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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
  ReasonCounters drops;              // data lost before it reached a profile
  ReasonCounters decode_errors;      // bytes that could not be turned into branches
  ReasonCounters windows_held_back;  // windows a source chose not to take (its caps)
  ReasonCounters windows_by_source;  // windows taken, by source, where a session has several
  std::atomic<uint64_t> pipeline_cpu_ns{0};  // thread CPU time spent on this target
};

// Charges the calling thread's CPU time to the targets it worked for, with one clock read per
// batch of items rather than per item: thread CPU time is a system call on every host, and a
// slow one on some (core/clock.h). Note() each item's target as it is applied; Flush() splits
// the CPU time since the last flush among the noted targets by their item counts.
class CpuCharger {
 public:
  CpuCharger();
  void Note(TargetAccounting* target);
  void Flush();
  size_t pending() const { return pending_; }

 private:
  uint64_t last_ns_;
  size_t pending_ = 0;
  std::vector<std::pair<TargetAccounting*, uint64_t>> noted_;
};

}  // namespace pathprof::pipeline
