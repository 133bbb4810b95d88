// pathctl analyze FILE: offline analysis of a recording (perf.data with LBR samples or Intel PT
// AUX data, or a .pbs branch stream) through the same ProfileStores `pathctl run` and the daemon
// use: hot paths, hot subpaths, hot call pairs and methods, symbolized, plus what the decoding
// kept and lost.
#include <algorithm>
#include <cstdio>
#include <string>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathprof/api/convert.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace pathctl {
namespace {

namespace pl = pathprof::pipeline;
using pl::AnalyzeFile;
using pl::AnalyzeOptions;
using pl::DecodeSummary;

struct ProcessReport {
  pl::TargetInfo info;
  pl::HotPathsResult paths;
  pl::HotSubpathsResult subpaths;
  pl::HotCallPairsResult pairs;
  pl::HotMethodsResult methods;
  pl::TargetStats stats;
};

// The report as v1::RecordingReport: the same messages the daemon serves for a session. A
// recording is not a session resource: no answer names one.
pathprof::v1::RecordingReport MakeReport(const std::string& file, const DecodeSummary& d,
                                         const std::vector<ProcessReport>& reports) {
  pathprof::v1::RecordingReport out;
  out.set_file(file);
  pathprof::api::ToProto(d, out.mutable_decode());
  for (const ProcessReport& r : reports) {
    pathprof::v1::ProcessReport* p = out.add_processes();
    p->set_pid(static_cast<int32_t>(r.info.pid));
    p->set_comm(r.info.comm);
    pathprof::api::ToProto(r.paths, "", p->mutable_hot_paths());
    pathprof::api::ToProto(r.subpaths, "", r.subpaths.subpaths.size(), p->mutable_hot_subpaths());
    pathprof::api::ToProto(r.pairs, "", p->mutable_hot_call_pairs());
    pathprof::api::ToProto(r.methods, "", p->mutable_hot_methods());
    pathprof::api::ToProto(r.stats, "", p->mutable_stats());
  }
  return out;
}

void PrintText(const pathprof::v1::RecordingReport& report) {
  std::printf("pathctl analyze: %s (%s)\n", report.file().c_str(),
              report.decode().format().c_str());
  for (const pathprof::v1::ProcessReport& p : report.processes()) {
    std::printf("\nprocess %d %s: %lld windows, %lld branches\n", p.pid(), p.comm().c_str(),
                static_cast<long long>(p.stats().windows()),
                static_cast<long long>(p.stats().branches()));
    PrintReportTables(p.hot_paths(), p.hot_subpaths(), p.hot_call_pairs(), p.hot_methods(),
                      "hot methods (entries in the branch stream)");
    std::printf("\naccounting:\n");
    google::protobuf::RepeatedPtrField<pathprof::v1::TargetStats> stats;
    *stats.Add() = p.stats();
    PrintTargetStats(stats);
  }
  std::printf("\n");
  PrintDecodeSummary(report.decode());
}

int RunAnalyze(Args& args) {
  AnalyzeOptions opt;
  opt.binary_dir = args.Get("binary-dir");
  if (args.Has("pid")) opt.pid = static_cast<uint32_t>(args.Int("pid"));
  const long long top = args.Int("top");
  const bool json = args.Has("json");
  opt.pbs_via_pt = args.Has("via-pt");
  opt.decode_only = args.Has("decode-only");
  opt.config.sampling.window_branches = static_cast<uint32_t>(args.Int("window"));
  opt.limits.max_stream_bytes = static_cast<uint64_t>(args.Int("max-stream-mb")) << 20;
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected exactly one FILE");
  if (!problems.empty()) return UsageError("analyze", problems);
  const std::string file = args.positional()[0];

  auto result = AnalyzeFile(file, opt);
  if (!result.ok()) return FailLocal("analyze", result.status());
  for (const std::string& w : result->decode.warnings)
    std::fprintf(stderr, "pathctl analyze: %s\n", w.c_str());
  const uint32_t k = static_cast<uint32_t>(top);
  std::vector<ProcessReport> reports;
  for (auto& [p, store] : result->stores) {
    ProcessReport r;
    r.info = store->Info();
    pl::HotPathsQuery hq;
    hq.top_k = k;
    r.paths = store->HotPaths(hq);
    pl::HotSubpathsQuery sq;
    sq.top_k = k;
    r.subpaths = store->HotSubpaths(sq);
    r.pairs = store->HotCallPairs(k);
    r.methods = store->HotMethods(k);
    r.stats = store->Stats();
    reports.push_back(std::move(r));
  }
  // Busiest process first.
  std::stable_sort(reports.begin(), reports.end(), [](const auto& a, const auto& b) {
    return a.stats.branches > b.stats.branches;
  });
  const pathprof::v1::RecordingReport report = MakeReport(file, result->decode, reports);
  json ? PrintJson(report) : PrintText(report);
  return result->decode.events == 0 ? kExitNoData : kExitOk;
}

PATHCTL_COMMAND(Command{
    "analyze",
    "hot paths, subpaths and call pairs of a recording (perf.data LBR or Intel PT, or .pbs)",
    "usage: pathctl analyze FILE [--binary-dir DIR] [--pid P] [--top K] [--json] [--via-pt]\n"
    "                            [--decode-only] [--max-stream-mb N]\n"
    "  FILE              perf.data with LBR samples (perf record -b) or Intel PT (-e "
    "intel_pt//u),\n"
    "                    or a .pbs branch stream (pathctl trace); a regular file, a pipe or a\n"
    "                    FIFO, - for stdin (devices are refused)\n"
    "--binary-dir DIR looks for the profiled binaries under DIR: by build-id (DIR/.build-id as\n"
    "perf buildid-cache keeps it, or any ELF file under DIR), then the recorded path under DIR\n"
    "(like perf's symfs option), then the basename.\n"
    "--decode-only rebuilds and counts the branch stream only: no profiles (what perf\n"
    "script -F ip,brstackinsn does, for comparisons).",
    {IntFlag("max-stream-mb", "N", "1024", 1, 1 << 20,
             "most read from a pipe or FIFO, held in memory")
         .Unit("MiB"),
     StringFlag("binary-dir", "DIR", "", "look for profiled binaries under DIR (see above)"),
     IntFlag("pid", "P", "", 1, kMaxPid, "only process P").Short("-p"),
     IntFlag("top", "K", "10", 1, 1000, "entries per table"),
     IntFlag("window", "W", "32", 1, 4096,
             "LBR depth assumed for subpath lengths (recordings of windows only)"),
     BoolFlag("via-pt",
              ".pbs only: analyze the stream encoded as Intel PT, through the PT decoder"),
     BoolFlag("decode-only", "rebuild and count the branch stream only (see above)"),
     BoolFlag("json", "one JSON object: decode statistics and, per process, every table")},
    RunAnalyze});

}  // namespace
}  // namespace pathctl
