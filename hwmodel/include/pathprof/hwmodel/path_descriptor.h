// A path as the hardware profiler names it (thesis ch. 5.2): start address, number of branches,
// one outcome bit per branch; plus the metrics accumulated along one traversal of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "pathprof/core/enum_words.h"

namespace pathprof::hwmodel {

// Paths longer than the configured maximum are split (PathStackConfig::max_path_length).
inline constexpr int kDefaultMaxPathLength = 32;
inline constexpr int kMaxPathLength = 64;  // outcomes is one 64-bit word

// Identity of a path. Bit i of `outcomes` is the outcome of the path's i-th branch (bit 0 is the
// first branch): 1 = taken or unconditional, 0 = not-taken conditional. Bits at or above
// `length` are zero.
struct PathDescriptor {
  uint64_t start = 0;
  uint8_t length = 0;
  uint64_t outcomes = 0;

  bool operator==(const PathDescriptor&) const = default;
};

// Fast, well-mixed 64-bit hash of the triple (a multiply-xorshift finaliser).
inline uint64_t HashPathDescriptor(const PathDescriptor& p) {
  uint64_t h = p.start * 0x9E3779B97F4A7C15ull;
  h ^= (p.outcomes + 0x632BE59BD9B4E019ull + (uint64_t{p.length} << 57)) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

struct PathDescriptorHash {
  size_t operator()(const PathDescriptor& p) const { return HashPathDescriptor(p); }
};

// The letters a path's outcomes are written in: "11011" where outcome bits are shown as bits
// (FormatPathDescriptor, pathctl sim), "TTNTT" where a reader reads them (pathctl's and
// pathtop's hot-path tables).
struct OutcomeLetters {
  char taken;
  char not_taken;
};
inline constexpr OutcomeLetters kOutcomeBits{'1', '0'};
inline constexpr OutcomeLetters kTakenNotTaken{'T', 'N'};
// The first `length` outcomes (at most kMaxPathLength), first branch first: the one formatter of
// a path's taken/not-taken string.
std::string FormatOutcomes(uint64_t outcomes, uint32_t length, OutcomeLetters letters);

// "start=0x401000 len=5 outcomes=11011" (outcomes printed first branch first).
std::string FormatPathDescriptor(const PathDescriptor& p);

// Which metric a Hot Path Table accumulates per path (thesis ch. 5.3).
enum class Metric : uint8_t {
  kCount = 0,       // traversals
  kInstructions,    // sum of BranchEvent::instructions along the path
  kCycles,          // sum of BranchEvent::cycles along the path
  kMispredictions,  // mispredicted branches along the path
};
// The one vocabulary of metrics (--metric, printouts); api/ maps them to pathprof.v1.Metric.
inline constexpr EnumWords<Metric, 4> kMetricWords{{
    {Metric::kCount, "count"},
    {Metric::kInstructions, "instructions"},
    {Metric::kCycles, "cycles"},
    {Metric::kMispredictions, "mispredictions"},
}};

std::string_view MetricName(Metric m);
// Accepts the names MetricName produces ("count", "instructions", "cycles", "mispredictions").
bool ParseMetric(std::string_view name, Metric* out);

// Metrics of one or more traversals of a path.
struct PathMetrics {
  uint64_t count = 0;
  uint64_t instructions = 0;
  uint64_t cycles = 0;
  uint64_t mispredictions = 0;

  uint64_t Get(Metric m) const {
    switch (m) {
      case Metric::kCount:
        return count;
      case Metric::kInstructions:
        return instructions;
      case Metric::kCycles:
        return cycles;
      case Metric::kMispredictions:
        return mispredictions;
    }
    return 0;
  }
  void Add(const PathMetrics& o) {
    count += o.count;
    instructions += o.instructions;
    cycles += o.cycles;
    mispredictions += o.mispredictions;
  }
  bool operator==(const PathMetrics&) const = default;
};

// One completed traversal, as the path stack pops it (metrics.count == 1).
// `first_taken`/`last_taken` locate it in the stream for window estimation: ordinals (1-based,
// counted since the last gap) of the last taken branch at or before the event that started the
// path, and of the first taken branch at or after the event that ended it. A window of W taken
// branches sees the traversal whole iff it holds both, so it spans k = last - first + 1.
struct CompletedPath {
  PathDescriptor path;
  PathMetrics metrics;
  uint64_t first_taken = 0;
  uint64_t last_taken = 0;

  uint64_t TakenSpan() const { return last_taken - first_taken + 1; }
};

}  // namespace pathprof::hwmodel

template <>
struct std::hash<pathprof::hwmodel::PathDescriptor> {
  size_t operator()(const pathprof::hwmodel::PathDescriptor& p) const {
    return pathprof::hwmodel::HashPathDescriptor(p);
  }
};
