#include "pathprof/decoders/branch_profile_export.h"

#include "pathprof/decoders/elf_image.h"
#include "perf_data_writer.h"

namespace pathprof::decoders {
namespace {

// `hex` (as ElfImage keeps build-ids) as the raw bytes perf.data wants, at most 20.
std::string RawBuildId(const std::string& hex) {
  std::string raw;
  for (size_t i = 0; i + 1 < hex.size() && raw.size() < 20; i += 2)
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return raw;
}

// The image of `binary`: through `open_image` from the first of the recording's images with
// that path, or (no opener) the file at that path.
Result<std::shared_ptr<const ElfImage>> OpenBinary(const PbsContents& recording,
                                                   const std::string& binary,
                                                   const ImageOpener& open_image) {
  if (!open_image) return ElfImage::Open(binary);
  for (const ImageRecord& img : recording.images)
    if (img.path == binary) return open_image(img);
  return Error(ErrorCode::kNotFound, "the recording never mapped " + binary +
                                         ": name a binary among its images (pathctl export "
                                         "prints them)");
}

}  // namespace

void FillBuildIds(PbsContents* recording, const ImageOpener& open_image) {
  for (ImageRecord& img : recording->images) {
    if (!img.build_id.empty()) continue;
    if (open_image) {  // a file the opener may not read keeps no build-id
      if (auto image = open_image(img); image.ok()) img.build_id = RawBuildId((*image)->build_id());
      continue;
    }
    if (auto hex = ReadBuildId(img.path); hex.ok()) img.build_id = RawBuildId(*hex);
  }
}

Result<BranchProfileSummary> WriteBranchProfile(PbsContents recording,
                                                const BranchProfileRequest& request,
                                                const std::string& output) {
  BranchProfileSummary summary;
  for (const BranchBatch& b : recording.batches) summary.windows += b.window;
  summary.images = recording.images.size();
  if (request.format == BranchProfileFormat::kBoltFdata) {
    summary.binary = request.binary;
    if (summary.binary.empty()) {
      if (recording.images.empty()) {
        return Error(ErrorCode::kNotFound,
                     request.source + " records no images: name the binary to profile");
      }
      summary.binary = recording.images.front().path;  // the tracers list the executable first
    }
    PATHPROF_ASSIGN_OR_RETURN(auto image,
                              OpenBinary(recording, summary.binary, request.open_image));
    PATHPROF_ASSIGN_OR_RETURN(auto stats,
                              WriteBoltFdata(recording, *image, summary.binary, output));
    summary.bolt = stats;
    summary.counts = summary.windows > 0
                         ? "branch counts summed over " + std::to_string(summary.windows) +
                               " ptrace-burst windows (time-weighted estimates, as LBR samples "
                               "give)"
                         : "exact branch counts of the traced run";
    return summary;
  }
  FillBuildIds(&recording, request.open_image);
  // An exact stream is cut into consecutive samples of `entries` taken branches, so every taken
  // branch is in exactly one sample; a window becomes one sample of its own.
  LbrSynthOptions lbr;
  lbr.entries = request.entries;
  lbr.period = request.entries;
  summary.counts =
      summary.windows > 0
          ? "one sample per ptrace-burst window (its last taken branches, newest first); "
            "windows start uniformly in time, so counts estimate time-weighted branch "
            "frequencies"
          : "exact trace cut into consecutive samples of " + std::to_string(request.entries) +
                " taken branches: every taken branch appears in exactly one sample";
  PerfDataWriterOptions options;
  options.cmdline = {"pathctl", "export", "--format", "perf-lbr", request.source, summary.counts};
  PATHPROF_RETURN_IF_ERROR(WriteLbrPerfData(output, recording, lbr, options));
  return summary;
}

}  // namespace pathprof::decoders
