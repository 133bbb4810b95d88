#include "pathctl/export_recording.h"

#include <cstdio>
#include <string>

#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathprof/core/pbs.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/perf_data_writer.h"

namespace pathctl {

int ExportRecordingAsPerfLbr(const RecordingExport& e) {
  auto pbs = pathprof::ReadPbsFile(e.input);
  if (!pbs.ok()) {
    std::fprintf(stderr, "pathctl export: %s\n", pbs.status().ToString().c_str());
    return pbs.status().code() == pathprof::ErrorCode::kNotFound ? kExitNotFound : kExitError;
  }
  // Recorders that did not note build-ids (the ptrace tracers read /proc maps only): take them
  // from the files, so that perf2bolt and create_llvm_prof can match the binaries.
  for (pathprof::ImageRecord& img : pbs->images) {
    if (!img.build_id.empty()) continue;
    auto hex = pathprof::decoders::ReadBuildId(img.path);
    if (!hex.ok()) continue;
    for (size_t i = 0; i + 1 < hex->size() && img.build_id.size() < 20; i += 2)
      img.build_id.push_back(static_cast<char>(std::stoi(hex->substr(i, 2), nullptr, 16)));
  }
  size_t windows = 0;
  for (const pathprof::BranchBatch& b : pbs->batches) windows += b.window;
  // An exact stream is cut into consecutive samples of `entries` taken branches, so every taken
  // branch is in exactly one sample; a window becomes one sample of its own.
  pathprof::decoders::LbrSynthOptions lbr;
  lbr.entries = e.entries;
  lbr.period = e.entries;
  pathprof::decoders::PerfDataWriterOptions options;
  const std::string meaning =
      windows > 0 ? "one sample per ptrace-burst window (its last taken branches, newest first); "
                    "windows start uniformly in time, so counts estimate time-weighted branch "
                    "frequencies"
                  : "exact trace cut into consecutive samples of " + std::to_string(e.entries) +
                        " taken branches: every taken branch appears in exactly one sample";
  options.cmdline = {"pathctl", "export", "--format", "perf-lbr", e.input, meaning};
  pathprof::Status st = pathprof::decoders::WriteLbrPerfData(e.output, *pbs, lbr, options);
  if (!st.ok()) {
    std::fprintf(stderr, "pathctl export: %s\n", st.ToString().c_str());
    return kExitError;
  }
  if (e.json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("file").String(e.output);
    j.Key("format").String("perf-lbr");
    j.Key("windows").Uint(windows);
    j.Key("images").Uint(pbs->images.size());
    j.Key("counts").String(meaning);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::fprintf(stderr,
                 "wrote %s: %s; %zu images as MMAP2 with build-ids. Read it with: perf script "
                 "-F ip,brstack -i %s, or perf2bolt -p %s -o FILE.fdata BINARY\n",
                 e.output.c_str(), meaning.c_str(), pbs->images.size(), e.output.c_str(),
                 e.output.c_str());
  }
  return kExitOk;
}

}  // namespace pathctl
