// The one table of a session's defaults. SessionConfig's members start from it, so the daemon
// (api/src/session_request.cc: a StartSessionRequest field left unset keeps it), `pathctl run`
// (a SessionConfig of its own) and `pathctl start` (whose help shows these values and whose
// request leaves a flag not given unset) all profile with the same settings.
#pragma once

#include <cstdint>

namespace pathprof::pipeline {

struct SessionDefaults {
  // Processes the targets fork are not followed unless asked (pathctl run/start --inherit,
  // StartSessionRequest.follow_children): each descendant gets stores of its own, which count
  // against the daemon's memory quotas like a target's.
  bool follow_children = false;
  // With follow_children: at most this many descendants get stores (further ones are counted).
  // The daemon's admission charges a session for every store it may make (MemoryBoundBytes), so
  // 64 put `start --inherit` above the default per-session memory quota; 4 was the daemon's.
  uint32_t max_descendants = 4;
  uint32_t stack_hz = 99;  // eBPF stack samples per second; 0: no stacks
  // --call-graph dwarf: user stack bytes copied per sample for the DWARF walk (perf's
  // --call-graph dwarf,SIZE; collectors::kMin/kMaxStackCopyBytes bound it).
  uint32_t stack_copy_bytes = 16384;
  uint32_t window_branches = 32;        // taken branches per window, like an LBR stack
  double max_stopped_fraction = 0.04;   // ptrace bursts: cap on any second threads spend stopped
  uint32_t extension = 2;               // N for the extended path kinds
  uint32_t max_path_length = 32;        // branches per path descriptor
  uint32_t hpt_entries = 512;           // Hot Path Table size
  uint32_t osp_memory_entries = 10000;  // OSP reservoir bound
  uint32_t pcct_max_depth = 128;        // frames placed per stack sample
};

inline constexpr SessionDefaults kSessionDefaults{};

}  // namespace pathprof::pipeline
