// How much of a binary a branch profile covers, said beside every export of a recording: a
// profile of a run that never reached what the real runs do (a small training input) gives the
// optimizer no counts for that code, and nothing in the optimizer's output says so. (A
// profile of zstd from a small training input missed the function that took 53% of the
// evaluation run.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"

namespace pathctl {

struct ProfileCoverage {
  std::string binary;
  uint64_t windows = 0;    // sampled windows in the recording (0: an exact trace)
  uint64_t branches = 0;   // branches an optimizer lays out (far transfers left out), each once
  uint64_t in_binary = 0;  // of those, from an instruction of the binary
  uint64_t in_named = 0;   // of those, inside a function the binary's symbols name
  uint64_t functions = 0;  // functions the binary names
  uint64_t functions_reached = 0;  // of those, with a branch of the profile inside
};

// Counts `recording`'s branches in `binary` (matched by path among its images, as the fdata
// writer does), weighted by how often each ran: every branch of the recording once.
pathprof::Result<ProfileCoverage> MeasureCoverage(const pathprof::PbsContents& recording,
                                                  const std::string& binary);

// One line: the shares above, in words.
std::string CoverageLine(const ProfileCoverage& c);

// What makes the profile thin for the binary, one sentence each (empty: nothing). The
// thresholds and why they are where they are: export_coverage.cc.
std::vector<std::string> ThinProfileWarnings(const ProfileCoverage& c);

}  // namespace pathctl
