// Looking into a session's per-process stats (pipeline::TargetStats) in the live tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/pipeline/results.h"

namespace pathprof::testing {

// The stats of `pid`'s store, or null when it has none.
inline const pipeline::TargetStats* StatsOf(const std::vector<pipeline::TargetStats>& all,
                                            pid_t pid) {
  for (const auto& t : all)
    if (t.pid == static_cast<uint32_t>(pid)) return &t;
  return nullptr;
}

// `reason`'s drops over every store.
inline uint64_t Dropped(const std::vector<pipeline::TargetStats>& all, const std::string& reason) {
  uint64_t n = 0;
  for (const auto& t : all)
    if (auto it = t.drops.find(reason); it != t.drops.end()) n += it->second;
  return n;
}

}  // namespace pathprof::testing
