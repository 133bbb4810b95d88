// A branch recording (an exact trace, software-LBR windows, a session's newest windows) written
// in a format an optimizer reads: perf.data of LBR-style samples (perf2bolt, create_llvm_prof)
// or BOLT's fdata. One entry point for `pathctl export` of a .pbs and for the daemon's export
// of a running session, so both write the same bytes and say the same about them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/bolt_fdata_writer.h"

namespace pathprof::decoders {

enum class BranchProfileFormat : uint8_t { kPerfLbr, kBoltFdata };

// The image of a file the recording mapped.
using ImageOpener = std::function<Result<std::shared_ptr<const ElfImage>>(const ImageRecord&)>;

struct BranchProfileRequest {
  BranchProfileFormat format = BranchProfileFormat::kPerfLbr;
  uint32_t entries = 32;  // perf-lbr: branches per sample (the LBR depth)
  std::string binary;     // fdata: the file to profile; empty: the recording's first image
  std::string source;     // what the recording is, for the perf.data header (e.g. its path)
  // How the files the recording mapped are read: fdata's binary (its symbols and code) and the
  // build-ids perf-lbr records. Empty: opened by path with the caller's own rights (pathctl,
  // exporting a recording of its user). A daemon's session passes its confined image access
  // instead, since a path is only a name the target's owner controls and the daemon is root;
  // then no file is opened by path, and fdata's binary must be one of the recording's images.
  ImageOpener open_image;
};

struct BranchProfileSummary {
  size_t windows = 0;  // 0: an exact trace
  size_t images = 0;
  std::string binary;   // fdata: the file profiled
  std::string counts;   // what the counts mean, in a sentence (also in perf.data's header)
  BoltFdataStats bolt;  // fdata only
};

// Gives each image without a build-id that of its file: through `open_image` when set (a file it
// may not read keeps none), else the file at its path.
void FillBuildIds(PbsContents* recording, const ImageOpener& open_image);

// Writes `recording` to `output`. Images without a build-id get the one of their file (the
// ptrace recorders note none), so perf2bolt and create_llvm_prof match the binaries; one whose
// file cannot be read keeps none.
Result<BranchProfileSummary> WriteBranchProfile(PbsContents recording,
                                                const BranchProfileRequest& request,
                                                const std::string& output);

}  // namespace pathprof::decoders
