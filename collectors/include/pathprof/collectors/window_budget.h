// One budget of snapshot windows for the whole host: windows a second and the collectors' CPU
// time, shared by every SnapshotWindowCollector that holds it (the daemon's continuous mode hands
// one to each series' session). A sample is taken for a window only when both have room; the
// budget refills with time, so a process gets windows in proportion to its samples, whichever
// session it is in. What it refuses is counted by the collector that asked.
#pragma once

#include <cstdint>
#include <mutex>

namespace pathprof::collectors {

struct WindowBudgetSettings {
  double windows_per_second = 2000;  // 0: no bound on the count
  // The collectors' CPU time on windows, as a share of one core (0.02: 2%); 0: no bound.
  double cpu_share = 0.02;
  // The most a quiet spell saves up, in seconds of each refill: a burst after it is bounded.
  double burst_seconds = 0.25;
};

class WindowBudget {
 public:
  enum class Refusal : uint8_t { kNone, kCount, kCpu };
  explicit WindowBudget(const WindowBudgetSettings& settings);
  // Whether a window may be emulated at `now_ns` (CLOCK_MONOTONIC); takes one from the count
  // when it may.
  Refusal Take(uint64_t now_ns);
  // The CPU time one window took, charged against the CPU share.
  void Spent(uint64_t cpu_ns);
  const WindowBudgetSettings& settings() const { return settings_; }

 private:
  void RefillLocked(uint64_t now_ns);

  const WindowBudgetSettings settings_;
  std::mutex mu_;
  uint64_t refilled_ns_ = 0;
  double windows_ = 0;  // windows that may still be taken
  double cpu_ns_ = 0;   // CPU time that may still be spent (below 0: in debt)
};

}  // namespace pathprof::collectors
