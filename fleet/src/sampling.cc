#include "sampling.h"

#include <algorithm>
#include <cmath>

namespace pathprof::fleet {

namespace {

// FNV-1a over the bytes, then the splitmix64 finalizer: FNV alone leaves similar host names
// ("web-001", "web-002") with correlated high bits; the finalizer spreads them.
uint64_t Mix(const std::string& host, int64_t epoch) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto feed = [&](unsigned char byte) {
    h ^= byte;
    h *= 0x100000001b3ull;
  };
  for (unsigned char c : host) feed(c);
  for (int i = 0; i < 8; ++i)
    feed(static_cast<unsigned char>(static_cast<uint64_t>(epoch) >> (8 * i)));
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

int64_t SamplingEpoch(const FleetSamplingOptions& options, int64_t unix_seconds) {
  const int64_t len = std::max<int64_t>(options.epoch_seconds, 1);
  const int64_t q = unix_seconds / len;
  return (unix_seconds % len != 0 && unix_seconds < 0) ? q - 1 : q;
}

bool HostSelected(const FleetSamplingOptions& options, const std::string& host, int64_t epoch) {
  const double f = std::clamp(options.host_fraction, 0.0, 1.0);
  if (f >= 1.0) return true;
  if (f <= 0.0) return false;
  // Compare in [0, 1): the top 53 bits of the mix as a double, exact.
  const double u = static_cast<double>(Mix(host, epoch) >> 11) * 0x1.0p-53;
  return u < f;
}

double FleetOverhead(double host_fraction, double per_host_overhead, double duty_cycle) {
  return std::clamp(host_fraction, 0.0, 1.0) * std::max(per_host_overhead, 0.0) *
         std::clamp(duty_cycle, 0.0, 1.0);
}

}  // namespace pathprof::fleet
