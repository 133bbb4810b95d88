// pathctl analyze FILE: offline analysis of a perf.data recording. For now the LBR part: replays
// every branch stack through the reconstructor and prints what was rebuilt and what was lost.
#include <cstdio>
#include <string>

#include "pathctl/command.h"
#include "pathprof/decoders/lbr_replay.h"

namespace pathctl {
namespace {

using pathprof::decoders::LbrReplayOptions;
using pathprof::decoders::ReplayLbr;

int RunAnalyze(Args& args) {
  LbrReplayOptions opt;
  opt.images.binary_dir = args.Get("binary-dir");
  const long long pid = args.GetInt("pid", -1);
  if (pid >= 0) opt.pid = static_cast<uint32_t>(pid);
  (void)args.GetInt("top", 10);  // used by the hot-path report once the pipeline lands
  const bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected exactly one perf.data FILE");
  if (!problems.empty()) return UsageError("analyze", problems);

  auto result = ReplayLbr(args.positional()[0], opt);
  if (!result.ok()) {
    std::fprintf(stderr, "pathctl analyze: %s\n", result.status().ToString().c_str());
    return kExitError;
  }
  const auto& r = *result;
  if (json) {
    std::printf(
        "{\"file\":\"%s\",\"records\":%llu,\"mmaps\":%llu,\"samples_without_branches\":%llu,"
        "\"images\":{\"found\":%llu,\"not_found\":%llu,\"build_id_mismatches\":%llu},"
        "\"lbr\":%s}\n",
        args.positional()[0].c_str(), static_cast<unsigned long long>(r.records),
        static_cast<unsigned long long>(r.mmaps),
        static_cast<unsigned long long>(r.samples_without_branches),
        static_cast<unsigned long long>(r.images.found),
        static_cast<unsigned long long>(r.images.not_found),
        static_cast<unsigned long long>(r.images.build_id_mismatches), r.lbr.ToJson().c_str());
  } else {
    std::printf("file %s\nrecords %llu\nmmaps %llu\nsamples_without_branches %llu\n",
                args.positional()[0].c_str(), static_cast<unsigned long long>(r.records),
                static_cast<unsigned long long>(r.mmaps),
                static_cast<unsigned long long>(r.samples_without_branches));
    std::printf("images.found %llu\nimages.not_found %llu\nimages.build_id_mismatches %llu\n",
                static_cast<unsigned long long>(r.images.found),
                static_cast<unsigned long long>(r.images.not_found),
                static_cast<unsigned long long>(r.images.build_id_mismatches));
    const std::string stats = r.lbr.ToString();
    size_t start = 0;
    while (start < stats.size()) {
      const size_t nl = stats.find('\n', start);
      std::printf("lbr.%s\n", stats.substr(start, nl - start).c_str());
      start = nl == std::string::npos ? stats.size() : nl + 1;
    }
  }
  return r.lbr.samples == 0 ? kExitNoData : kExitOk;
}

PATHCTL_COMMAND(Command{
    "analyze",
    "reconstruct and summarize a perf.data recording offline",
    "usage: pathctl analyze FILE [--binary-dir DIR] [--pid P] [--top K] [--json]\n"
    "  --binary-dir DIR  look for profiled binaries under DIR (recorded path, then basename),\n"
    "                    like perf's --symfs\n"
    "  --pid P           only samples of process P\n"
    "  --json            one JSON object instead of 'name value' lines",
    {"json"},
    RunAnalyze});

}  // namespace
}  // namespace pathctl
