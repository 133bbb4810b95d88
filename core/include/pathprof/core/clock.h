// The clocks pathprof reads, in one place. Monotonic and wall time come from the vDSO on most
// hosts, but thread CPU time is always a system call, and on some hypervisors (an unstable TSC,
// a clocksource without vDSO support) every read is one, at ~1.3 us each. So callers read clocks
// per batch of work, never per sample or per event; the counter below lets tests hold them to
// that, and the slow-clock quirk (host_quirks.h) makes every read a real system call.
#pragma once

#include <cstdint>

namespace pathprof {

uint64_t MonotonicNs();   // CLOCK_MONOTONIC
int64_t UnixMs();         // CLOCK_REALTIME, milliseconds since the epoch
uint64_t ThreadCpuNs();   // CLOCK_THREAD_CPUTIME_ID of the calling thread
uint64_t ProcessCpuNs();  // CLOCK_PROCESS_CPUTIME_ID

// Clock reads made by this process so far (all of the above), for tests and stats.
uint64_t ClockReads();

}  // namespace pathprof
