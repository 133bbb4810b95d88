// Sampling across machines: which hosts profile at full rate in a given epoch, decided by each
// host alone (a hash of its name and the epoch number), so no coordinator is needed and the
// chosen set rotates every epoch. See docs/fleet.md for the overhead-budget arithmetic.
#pragma once

#include <cstdint>
#include <string>

namespace pathprof::fleet {

struct FleetSamplingOptions {
  double host_fraction = 0.01;   // share of hosts profiling in any epoch, in [0, 1]
  int64_t epoch_seconds = 3600;  // how long one choice of hosts lasts; >= 1
};

// Epoch number of a Unix time (floor division; negative times give negative epochs).
int64_t SamplingEpoch(const FleetSamplingOptions& options, int64_t unix_seconds);

// True when `host` is in the profiled share for `epoch`. Uniform over hosts: a 64-bit mix of
// (host, epoch) compared against host_fraction * 2^64.
bool HostSelected(const FleetSamplingOptions& options, const std::string& host, int64_t epoch);

// Expected fleet-wide CPU cost as a fraction of fleet CPU: host_fraction * per_host_overhead *
// duty_cycle (the share of a selected host's time it actually profiles). E.g. 0.01 * 0.05 * 1.0 =
// 0.0005 (0.05%).
double FleetOverhead(double host_fraction, double per_host_overhead, double duty_cycle);

}  // namespace pathprof::fleet
