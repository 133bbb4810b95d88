// pathctl export of a recording (.pbs: an exact trace from `pathctl trace` or ptrace-burst
// windows from `pathctl bursts -o`) as a perf.data of LBR-style branch-stack samples, which
// `perf script -F brstack`, perf2bolt and create_llvm_prof read as a `perf record -b` file, or
// as BOLT's fdata for one binary, which `llvm-bolt -data` reads without perf2bolt.
#pragma once

#include <cstdint>
#include <string>

namespace pathctl {

struct RecordingExport {
  std::string input;      // the .pbs file
  std::string output;     // the perf.data to write
  uint32_t entries = 32;  // branches per sample (the LBR depth)
  bool json = false;
  std::string binary;  // fdata: the binary to profile (default: the recording's first image)
};

// Returns an exit code; says what it wrote (and what the counts mean) on stderr or as JSON.
int ExportRecordingAsPerfLbr(const RecordingExport& e);
int ExportRecordingAsBoltFdata(const RecordingExport& e);

}  // namespace pathctl
