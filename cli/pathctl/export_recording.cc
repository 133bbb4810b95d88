#include "pathctl/export_recording.h"

#include <cstdio>
#include <string>

#include "pathctl/bolt_tools.h"
#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/export_coverage.h"
#include "pathprof/core/pbs.h"
#include "pathprof/v1/tools.pb.h"

namespace pathctl {

namespace dec = pathprof::decoders;

int ExportRecording(const BranchExport& e) {
  auto fail = [](const pathprof::Status& st) {
    std::fprintf(stderr, "pathctl export: %s\n", st.ToString().c_str());
    return st.code() == pathprof::ErrorCode::kNotFound ? kExitNotFound : kExitError;
  };
  auto pbs = pathprof::ReadPbsFile(e.input);
  if (!pbs.ok()) return fail(pbs.status());
  BranchExport shown = e;  // the binary the hints name: the traced executable unless given
  if (shown.request.binary.empty() && !pbs->images.empty())
    shown.request.binary = pbs->images.front().path;
  // Measured before the recording goes to the writer; said after what was written.
  auto coverage = shown.request.binary.empty()
                      ? pathprof::Result<ProfileCoverage>(pathprof::Error(
                            pathprof::ErrorCode::kNotFound, "the recording names no binary"))
                      : MeasureCoverage(*pbs, shown.request.binary);
  auto summary = dec::WriteBranchProfile(std::move(*pbs), e.request, e.output);
  if (!summary.ok()) return fail(summary.status());
  ReportBranchExport(shown, *summary);
  ReportCoverage(coverage);
  return kExitOk;
}

void ReportCoverage(const pathprof::Result<ProfileCoverage>& coverage) {
  if (!coverage.ok()) {
    std::fprintf(stderr, "coverage: not measured: %s\n", coverage.status().message().c_str());
    return;
  }
  std::fprintf(stderr, "%s\n", CoverageLine(*coverage).c_str());
  for (const std::string& w : ThinProfileWarnings(*coverage))
    std::fprintf(stderr, "warning: thin profile: %s\n", w.c_str());
}

std::string FdataPathFor(const std::string& perf_data) {
  const std::string stem =
      perf_data.ends_with(".data") ? perf_data.substr(0, perf_data.size() - 5) : perf_data;
  return stem + ".fdata";
}

void ReportBranchExport(const BranchExport& e, const dec::BranchProfileSummary& s) {
  const bool bolt = e.request.format == dec::BranchProfileFormat::kBoltFdata;
  if (e.json) {
    pathprof::v1::ExportReport report;
    report.set_file(e.output);
    report.set_format(bolt ? pathprof::v1::EXPORT_FORMAT_BOLT_FDATA
                           : pathprof::v1::EXPORT_FORMAT_PERF_LBR);
    report.set_windows(static_cast<int64_t>(s.windows));
    report.set_images(static_cast<int64_t>(s.images));
    report.set_counts(s.counts);
    if (bolt) {
      report.set_binary(s.binary);
      pathprof::v1::BoltCounts* c = report.mutable_bolt();
      c->set_taken(static_cast<int64_t>(s.bolt.taken));
      c->set_fall_throughs(static_cast<int64_t>(s.bolt.fall_throughs));
      c->set_lines(static_cast<int64_t>(s.bolt.lines));
      c->set_elsewhere(static_cast<int64_t>(s.bolt.elsewhere));
      c->set_unnamed(static_cast<int64_t>(s.bolt.unnamed));
      c->set_far_transfers(static_cast<int64_t>(s.bolt.far_transfers));
    }
    PrintJson(report);
  } else if (bolt) {
    std::fprintf(stderr,
                 "wrote %s for %s: %s; %llu taken branches and %llu not-taken conditionals in "
                 "%llu lines (left out: %llu branches elsewhere, %llu between addresses no "
                 "function symbol covers, %llu far transfers).\n",
                 e.output.c_str(), s.binary.c_str(), s.counts.c_str(),
                 (unsigned long long)s.bolt.taken, (unsigned long long)s.bolt.fall_throughs,
                 (unsigned long long)s.bolt.lines, (unsigned long long)s.bolt.elsewhere,
                 (unsigned long long)s.bolt.unnamed, (unsigned long long)s.bolt.far_transfers);
    PrintOptimizeHint(s.binary, e.output);
  } else {
    std::fprintf(stderr,
                 "wrote %s: %s; %zu images as MMAP2 with build-ids. Read it with: perf script "
                 "-F ip,brstack -i %s\n",
                 e.output.c_str(), s.counts.c_str(), s.images, e.output.c_str());
    const std::string binary = e.request.binary.empty() ? "BINARY" : e.request.binary;
    const ToolCommand p2b = Perf2BoltCommand(e.output, FdataPathFor(e.output), binary, PathDirs());
    if (p2b.found)
      std::fprintf(stderr, "BOLT's fdata from it: %s\n", p2b.command.c_str());
    else
      std::fprintf(stderr,
                   "BOLT's fdata from it: no perf2bolt or llvm-bolt here: %s (or export "
                   "--format bolt, which writes fdata without them)\n",
                   p2b.command.c_str());
  }
}

void PrintOptimizeHint(const std::string& binary, const std::string& fdata) {
  const ToolCommand bolt = LlvmBoltCommand(binary, fdata, PathDirs());
  if (bolt.found)
    std::fprintf(stderr, "Optimize with: %s\n", bolt.command.c_str());
  else
    std::fprintf(stderr, "Optimize with llvm-bolt, not found here: %s\n", bolt.command.c_str());
}

}  // namespace pathctl
