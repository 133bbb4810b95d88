// What a target process may do, read from /proc, to tell when a non-admin's target gains
// privileges its requester does not have (it execs a setuid binary, a setgid one, or one with
// file capabilities, or becomes non-dumpable). Ownership checked once at session start is not
// enough: credentials change at exec.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::pipeline {

struct TargetCredentials {
  std::array<uint32_t, 4> uids{};  // real, effective, saved, filesystem
  std::array<uint32_t, 4> gids{};
  uint64_t cap_effective = 0;
  uint64_t cap_permitted = 0;
  // The owner of /proc/PID: the effective uid, or root once the process is not dumpable.
  uint32_t proc_owner = 0;
};

Result<TargetCredentials> ReadTargetCredentials(uint32_t pid);

// Who a non-admin session is confined to: the requester's uid, and the group ids its targets
// had when the session started.
struct Confinement {
  uint32_t uid = 0;
  std::vector<uint32_t> gids;
};

// Empty when `now` holds nothing beyond `who`; otherwise what was gained, for messages
// ("effective uid 0 (was 1000)", "capabilities 0x1fff", "not dumpable").
std::string PrivilegeGain(const TargetCredentials& now, const Confinement& who);

}  // namespace pathprof::pipeline
