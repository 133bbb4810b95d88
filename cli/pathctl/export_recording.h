// pathctl export of branches: a recording (.pbs: an exact trace from `pathctl trace` or
// ptrace-burst windows from `pathctl bursts -o`) or a daemon session's newest windows, as a
// perf.data of LBR-style branch-stack samples (`perf script -F brstack`, perf2bolt and
// create_llvm_prof read it as a `perf record -b` file) or as BOLT's fdata for one binary
// (`llvm-bolt -data` reads it without perf2bolt).
#pragma once

#include <cstdint>
#include <string>

#include "pathprof/decoders/branch_profile_export.h"

namespace pathctl {

struct BranchExport {
  std::string input;   // the .pbs file, or the session id
  std::string output;  // the file to write
  pathprof::decoders::BranchProfileRequest request;
  bool json = false;
};

// Returns an exit code; says what it wrote (and what the counts mean) on stderr or as JSON.
int ExportRecording(const BranchExport& e);

// What was written, in the same words for a recording and a session.
void ReportBranchExport(const BranchExport& e, const pathprof::decoders::BranchProfileSummary& s);

}  // namespace pathctl
