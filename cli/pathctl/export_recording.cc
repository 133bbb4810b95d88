#include "pathctl/export_recording.h"

#include <cstdio>
#include <string>

#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathprof/core/pbs.h"

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
    JsonWriter j;
    j.BeginObject();
    j.Key("file").String(e.output);
    j.Key("format").String(bolt ? "bolt" : "perf-lbr");
    j.Key("windows").Uint(s.windows);
    j.Key("images").Uint(s.images);
    if (bolt) {
      j.Key("binary").String(s.binary);
      j.Key("taken").Uint(s.bolt.taken);
      j.Key("fall_throughs").Uint(s.bolt.fall_throughs);
      j.Key("elsewhere").Uint(s.bolt.elsewhere);
      j.Key("unnamed").Uint(s.bolt.unnamed);
      j.Key("far_transfers").Uint(s.bolt.far_transfers);
      j.Key("lines").Uint(s.bolt.lines);
    }
    j.Key("counts").String(s.counts);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
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
