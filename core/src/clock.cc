#include "pathprof/core/clock.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "pathprof/core/host_quirks.h"

namespace pathprof {
namespace {

std::atomic<uint64_t> g_reads{0};

timespec Read(clockid_t id) {
  g_reads.fetch_add(1, std::memory_order_relaxed);
  timespec ts{};
  if (SimulatedQuirks().slow_clock)
    syscall(SYS_clock_gettime, id, &ts);  // bypasses the vDSO, as on the quirky hosts
  else
    clock_gettime(id, &ts);
  return ts;
}

uint64_t Ns(const timespec& ts) {
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t MonotonicNs() {
  return Ns(Read(CLOCK_MONOTONIC));
}

int64_t UnixMs() {
  const timespec ts = Read(CLOCK_REALTIME);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

uint64_t ThreadCpuNs() {
  return Ns(Read(CLOCK_THREAD_CPUTIME_ID));
}

uint64_t ProcessCpuNs() {
  return Ns(Read(CLOCK_PROCESS_CPUTIME_ID));
}

uint64_t ClockReads() {
  return g_reads.load(std::memory_order_relaxed);
}

}  // namespace pathprof
