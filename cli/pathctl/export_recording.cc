#include "pathctl/export_recording.h"

#include <cstdio>
#include <string>

#include "pathctl/client.h"
#include "pathctl/command.h"
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
  auto summary = dec::WriteBranchProfile(std::move(*pbs), e.request, e.output);
  if (!summary.ok()) return fail(summary.status());
  ReportBranchExport(e, *summary);
  return kExitOk;
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
                 "function symbol covers, %llu far transfers). Optimize with: llvm-bolt-15 %s "
                 "-data %s -o OUT\n",
                 e.output.c_str(), s.binary.c_str(), s.counts.c_str(),
                 (unsigned long long)s.bolt.taken, (unsigned long long)s.bolt.fall_throughs,
                 (unsigned long long)s.bolt.lines, (unsigned long long)s.bolt.elsewhere,
                 (unsigned long long)s.bolt.unnamed, (unsigned long long)s.bolt.far_transfers,
                 s.binary.c_str(), e.output.c_str());
  } else {
    std::fprintf(stderr,
                 "wrote %s: %s; %zu images as MMAP2 with build-ids. Read it with: perf script "
                 "-F ip,brstack -i %s, or perf2bolt -p %s -o FILE.fdata BINARY\n",
                 e.output.c_str(), s.counts.c_str(), s.images, e.output.c_str(), e.output.c_str());
  }
}

}  // namespace pathctl
