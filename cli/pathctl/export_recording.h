// pathctl export of branches: a recording (.pbs: an exact trace from `pathctl trace` or
// ptrace-burst windows from `pathctl bursts -o`) or a daemon session's newest windows, as a
// perf.data of LBR-style branch-stack samples (`perf script -F brstack`, perf2bolt and
// create_llvm_prof read it as a `perf record -b` file) or as BOLT's fdata for one binary
// (`llvm-bolt -data` reads it without perf2bolt).
#pragma once

#include <cstdint>
#include <string>

#include "pathctl/export_coverage.h"
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

// What was written, in the same words for a recording and a session, and the command that
// takes it on from here on this host (bolt_tools.h).
void ReportBranchExport(const BranchExport& e, const pathprof::decoders::BranchProfileSummary& s);

// The coverage line and the thin-profile warnings (export_coverage.h), on stderr.
void ReportCoverage(const pathprof::Result<ProfileCoverage>& coverage);

// "Optimize with: llvm-bolt ..." for the llvm-bolt found here (or what to install), on stderr.
void PrintOptimizeHint(const std::string& binary, const std::string& fdata);

// Where the perf2bolt hint has the fdata of `perf_data` go: X.data -> X.fdata.
std::string FdataPathFor(const std::string& perf_data);

}  // namespace pathctl
