#include "pathctl/export_recording.h"

#include <cstdio>
#include <string>

#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathprof/core/pbs.h"
#include "pathprof/decoders/bolt_fdata_writer.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/perf_data_writer.h"

namespace pathctl {

namespace {

int Fail(const pathprof::Status& st) {
  std::fprintf(stderr, "pathctl export: %s\n", st.ToString().c_str());
  return st.code() == pathprof::ErrorCode::kNotFound ? kExitNotFound : kExitError;
}

}  // namespace

int ExportRecordingAsPerfLbr(const RecordingExport& e) {
  auto pbs = pathprof::ReadPbsFile(e.input);
  if (!pbs.ok()) return Fail(pbs.status());
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
  if (!st.ok()) return Fail(st);
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

int ExportRecordingAsBoltFdata(const RecordingExport& e) {
  auto pbs = pathprof::ReadPbsFile(e.input);
  if (!pbs.ok()) return Fail(pbs.status());
  std::string binary = e.binary;
  if (binary.empty()) {
    if (pbs->images.empty()) {
      return Fail(pathprof::Error(pathprof::ErrorCode::kNotFound,
                                  e.input + " records no images: pass --binary PATH"));
    }
    binary = pbs->images.front().path;  // the tracers list the executable first
  }
  auto image = pathprof::decoders::ElfImage::Open(binary);
  if (!image.ok()) return Fail(image.status());
  auto stats = pathprof::decoders::WriteBoltFdata(*pbs, **image, e.output);
  if (!stats.ok()) return Fail(stats.status());
  size_t windows = 0;
  for (const pathprof::BranchBatch& b : pbs->batches) windows += b.window;
  const std::string meaning =
      windows > 0 ? "branch counts summed over " + std::to_string(windows) +
                        " ptrace-burst windows (time-weighted estimates, as LBR samples give)"
                  : "exact branch counts of the traced run";
  if (e.json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("file").String(e.output);
    j.Key("format").String("bolt");
    j.Key("binary").String(binary);
    j.Key("windows").Uint(windows);
    j.Key("taken").Uint(stats->taken);
    j.Key("fall_throughs").Uint(stats->fall_throughs);
    j.Key("elsewhere").Uint(stats->elsewhere);
    j.Key("unnamed").Uint(stats->unnamed);
    j.Key("far_transfers").Uint(stats->far_transfers);
    j.Key("lines").Uint(stats->lines);
    j.Key("counts").String(meaning);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::fprintf(
        stderr,
        "wrote %s for %s: %s; %llu taken branches and %llu not-taken conditionals in "
        "%llu lines (left out: %llu branches elsewhere, %llu between addresses no function "
        "symbol covers, %llu far transfers). "
        "Optimize with: llvm-bolt-15 %s -data %s -o OUT\n",
        e.output.c_str(), binary.c_str(), meaning.c_str(), (unsigned long long)stats->taken,
        (unsigned long long)stats->fall_throughs, (unsigned long long)stats->lines,
        (unsigned long long)stats->elsewhere, (unsigned long long)stats->unnamed,
        (unsigned long long)stats->far_transfers, binary.c_str(), e.output.c_str());
  }
  return kExitOk;
}

}  // namespace pathctl
