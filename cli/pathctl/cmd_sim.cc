// pathctl sim: runs the path engine (path stack + Hot Path Table, or the window estimator) over a
// synthetic workload or a recorded .pbs stream and scores it against the exact profile. The work
// is pipeline/offline_sim.h and pipeline/hpt_sweep.h; this file reads flags and prints.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/sim_source.h"
#include "pathctl/sim_stream_profiles.h"
#include "pathprof/api/convert.h"
#include "pathprof/core/hex.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/hpt_sweep.h"
#include "pathprof/pipeline/offline_sim.h"
#include "pathprof/synth/executor.h"
#include "pathprof/synth/workload.h"
#include "pathprof/v1/sim.pb.h"

namespace pathctl {
namespace {

using namespace pathprof;
using hwmodel::PathDescriptor;
using pipeline::PathEngineSimResult;

Result<hwmodel::HotPathTableConfig> ParseHpt(Args& args) {
  hwmodel::HotPathTableConfig c;
  std::string geometry = args.Get("hpt");
  unsigned entries = 0, ways = 0;
  char tail = 0;
  if (std::sscanf(geometry.c_str(), "%ux%u%c", &entries, &ways, &tail) != 2)
    return Error(ErrorCode::kInvalidArgument,
                 "--hpt expects ENTRIESxWAYS such as 512x4, got '" + geometry + "'");
  c.entries = entries;
  c.ways = ways;
  std::string index = args.Get("index");
  if (!hwmodel::ParseHptIndex(index, &c.index))
    return Error(ErrorCode::kInvalidArgument, "--index expects xor or start, got '" + index + "'");
  std::string repl = args.Get("replacement");
  if (!hwmodel::ParseHptReplacement(repl, &c.replacement))
    return Error(ErrorCode::kInvalidArgument,
                 "--replacement expects lfu or lru, got '" + repl + "'");
  std::string metric = args.Get("metric");
  if (!hwmodel::ParseMetric(metric, &c.metric))
    return Error(
        ErrorCode::kInvalidArgument,
        "--metric expects count, instructions, cycles or mispredictions, got '" + metric + "'");
  PATHPROF_RETURN_IF_ERROR(c.Validate());
  return c;
}

// ---- one run of the path engine ----

void FillConfig(const std::string& source, const PathEngineSimResult& r, v1::SimReport* out) {
  out->set_source(source);
  out->set_mode(pathprof::api::ToProto(r.mode));
  out->set_paths(r.paths);
  out->set_hpt_entries(static_cast<int32_t>(r.hpt.entries));
  out->set_hpt_ways(static_cast<int32_t>(r.hpt.ways));
  out->set_hpt_index(pathprof::api::ToProto(r.hpt.index));
  out->set_hpt_replacement(pathprof::api::ToProto(r.hpt.replacement));
  out->set_metric(pathprof::api::ToProto(r.hpt.metric));
}

void FillScores(const PathEngineSimResult& r, v1::SimReport* out) {
  out->set_branches(static_cast<int64_t>(r.branches));
  out->set_paths_completed(static_cast<int64_t>(r.paths_completed));
  out->set_paths_distinct(static_cast<int64_t>(r.paths_distinct));
  out->set_hpt_valid_entries(static_cast<int64_t>(r.hpt_valid));
  out->set_overlap_pct(r.overlap);
  out->set_hps_overlap_pct(r.hps_overlap);
  out->set_ideal_overlap_pct(r.ideal_overlap);
  out->set_top100_share_pct(r.top100);
  if (r.dynamic_overlap) out->set_dynamic_overlap_pct(*r.dynamic_overlap);
  out->set_dynamic_windows(static_cast<int64_t>(r.dynamic_windows));
  out->set_dynamic_window_branches(static_cast<int64_t>(r.dynamic_window));
  out->set_sampling_period(r.sampling_period);
}

void FillEngineStats(const PathEngineSimResult& r, v1::SimReport* out) {
  v1::SimPathStackStats& st = *out->mutable_stack();
  st.set_gaps(static_cast<int64_t>(r.stack.gaps));
  st.set_splits(static_cast<int64_t>(r.stack.splits));
  st.set_unknown_start(static_cast<int64_t>(r.stack.unknown_start));
  st.set_truncated(static_cast<int64_t>(r.stack.truncated));
  st.set_overflow_dropped(static_cast<int64_t>(r.stack.overflow_dropped));
  st.set_return_mismatches(static_cast<int64_t>(r.stack.return_mismatches));
  v1::SimHotPathTableStats& t = *out->mutable_hpt_stats();
  t.set_lookups(static_cast<int64_t>(r.table.lookups));
  t.set_hits(static_cast<int64_t>(r.table.hits));
  t.set_evictions(static_cast<int64_t>(r.table.evictions));
  t.set_saturations(static_cast<int64_t>(r.table.saturations));
}

void FillTop(const PathEngineSimResult& r, v1::SimReport* out) {
  for (const auto& t : r.top) {
    v1::SimHotPath& p = *out->add_top();
    p.set_start(t.path.start);
    p.set_length(t.path.length);
    p.set_outcomes(t.path.outcomes);
    p.set_estimate(t.estimate);
    p.set_share(t.share);
    p.set_exact(t.exact);
    p.set_exact_rank(static_cast<int64_t>(t.exact_rank));
    p.set_relative_error(t.relative_error);
  }
}

void PrintSimJson(const std::string& source, const PathEngineSimResult& r) {
  v1::SimReport report;
  FillConfig(source, r, &report);
  FillScores(r, &report);
  FillEngineStats(r, &report);
  FillTop(r, &report);
  PrintJson(report);
}

void PrintText(const std::string& source, const PathEngineSimResult& r) {
  std::printf("pathctl sim: %s, %" PRIu64 " branches, %s paths, mode %s\n", source.c_str(),
              r.branches, r.paths.c_str(), std::string(pipeline::SimModeName(r.mode)).c_str());
  if (r.mode != pipeline::SimMode::kWindow) {
    std::printf("HPT %ux%u, %s index, %s replacement, metric %s\n", r.hpt.entries, r.hpt.ways,
                std::string(hwmodel::HptIndexName(r.hpt.index)).c_str(),
                std::string(hwmodel::HptReplacementName(r.hpt.replacement)).c_str(),
                std::string(hwmodel::MetricName(r.hpt.metric)).c_str());
  }
  std::printf("paths: %" PRIu64 " completed, %zu distinct; estimate holds %zu\n", r.paths_completed,
              r.paths_distinct, r.hpt_valid);
  std::printf("overlap with the exact profile: %.2f%% complete", r.overlap);
  if (r.dynamic_overlap) {
    std::printf(", %.2f%% dynamic (%zu window(s) of %" PRIu64 " branches)", *r.dynamic_overlap,
                r.dynamic_windows, r.dynamic_window);
  }
  std::printf(", %.2f%% HPS (90%% members)\n", r.hps_overlap);
  std::printf(
      "the %zu heaviest exact paths hold %.2f%% (the best any table of that size can do); "
      "the top 100 hold %.2f%%\n\n",
      r.hpt_valid, r.ideal_overlap, r.top100);
  std::printf("%4s  %-14s %4s  %-32s %14s %7s %14s %6s %8s\n", "rank", "start", "len", "outcomes",
              "estimate", "share", "exact", "rank", "rel.err");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& t = r.top[i];
    std::string bits =
        hwmodel::FormatOutcomes(t.path.outcomes, t.path.length, hwmodel::kOutcomeBits);
    if (bits.size() > 32) bits = bits.substr(0, 29) + "...";
    std::printf("%4zu  %-14s %4u  %-32s %14.0f %6.2f%% %14.0f %6zu %+7.2f%%\n", i + 1,
                pathprof::HexAddress(t.path.start).c_str(), t.path.length, bits.c_str(), t.estimate,
                100 * t.share, t.exact, t.exact_rank, 100 * t.relative_error);
  }
}

// What `pathctl sim` (no --sweep, --subpaths or --calls) was asked for.
struct SimFlags {
  bool json = false;
  std::string source_desc;
  std::unique_ptr<Source> source;
  pipeline::PathEngineSimOptions options;
};

// The usage problems in the flags; none when *flags is filled in. Every stray or malformed flag
// is listed, else the first bad value alone.
std::vector<std::string> ParseSimFlags(Args& args, SimFlags* flags) {
  flags->json = args.Has("json");
  auto hpt_config = ParseHpt(args);
  auto stack_config = hwmodel::ParsePathStackConfig(args.Get("paths"));
  long long window = args.Int("window"), period = args.Int("period");
  long long interval = args.Has("sample-interval") ? args.Int("sample-interval") : -1,
            burst = args.Int("burst-length");
  long long top_k = args.Int("top");
  long long dyn = args.Int("dynamic-window");
  auto source = Source::Open(args, &flags->source_desc);
  if (auto p = args.Problems(); !p.empty()) return p;
  for (const Status* s : {&hpt_config.status(), &stack_config.status(), &source.status()}) {
    if (!s->ok()) return {s->message()};
  }
  if (top_k < 0 || dyn < 1) return {"--top must be >= 0, --dynamic-window >= 1"};
  const bool window_mode = window > 0 || period > 0;
  const bool bursty_mode = interval >= 0 || burst > 0;
  if (window_mode && bursty_mode)
    return {"--window/--period and --sample-interval/--burst-length exclude each other"};
  if (window_mode && (window < 1 || period < 1))
    return {"window sampling needs --window W >= 1 and --period P >= 1"};
  pipeline::PathEngineSimOptions& o = flags->options;
  o.stack = *stack_config;
  o.hpt = *hpt_config;
  if (bursty_mode) {
    o.bursty.emplace();
    o.bursty->sample_interval = static_cast<uint64_t>(std::max(0LL, interval));
    o.bursty->burst_length = static_cast<uint64_t>(burst > 0 ? burst : 100);
  } else if (window_mode) {
    o.window = static_cast<uint64_t>(window);
    o.period = static_cast<uint64_t>(period);
  }
  o.top = static_cast<size_t>(top_k);
  o.dynamic_window = static_cast<uint64_t>(dyn);
  flags->source = std::move(source).value();
  return {};
}

// ---- the sweep ----

std::vector<uint32_t> ParseList(const std::string& s, std::vector<std::string>* problems,
                                const char* flag) {
  std::vector<uint32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end || v == 0 || v > (1u << 24)) {
      problems->push_back(std::string("--") + flag +
                          " expects a comma-separated list of positive integers, got '" + s + "'");
      return {};
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

// What `pathctl sim --sweep` was asked for.
struct SweepFlags {
  bool json = false;
  uint64_t seed = 1, branches = 0;
  std::vector<std::string> workloads;
  pipeline::HptSweepOptions options;
};

std::vector<std::string> ParseSweepFlags(Args& args, SweepFlags* flags) {
  flags->json = args.Has("json");
  std::string list = args.Get("workload", "all");
  flags->seed = static_cast<uint64_t>(args.Int("seed"));
  flags->branches = static_cast<uint64_t>(args.Int("branches"));
  const auto dyn = static_cast<uint64_t>(args.Int("dynamic-window"));
  auto stack_config = hwmodel::ParsePathStackConfig(args.Get("paths"));
  std::vector<std::string> problems;
  // The sweep sets the geometry from --sizes and --ways: a --hpt would be ignored.
  if (args.Has("hpt"))
    problems.push_back("--hpt does not go with --sweep (--sizes and --ways set the grid)");
  auto base = ParseHpt(args);
  pipeline::HptSweepOptions& o = flags->options;
  o.sizes = ParseList(args.Get("sizes"), &problems, "sizes");
  o.ways = ParseList(args.Get("ways"), &problems, "ways");
  synth::WorkloadSpec probe;
  ApplyKnobs(args, &probe);  // marks the knob flags as known before Problems()
  for (const auto& p : args.Problems()) problems.push_back(p);
  if (!stack_config.ok()) problems.push_back(stack_config.status().message());
  if (!base.ok()) problems.push_back(base.status().message());
  if (dyn < 1 || flags->branches < 1)
    problems.push_back("--branches and --dynamic-window must be >= 1");
  if (list == "all") {
    flags->workloads = synth::BundledWorkloadNames();
  } else {
    std::stringstream ss(list);
    std::string w;
    while (std::getline(ss, w, ',')) flags->workloads.push_back(w);
  }
  if (!problems.empty()) return problems;
  o.stack = *stack_config;
  o.base = *base;
  o.dynamic_window = dyn;
  return {};
}

// The first `branches` branches of a synthetic stream, in chunks of kChunk.
pipeline::NextBatchFn SyntheticBatches(synth::SyntheticStream* stream, uint64_t branches) {
  return [stream, branches, done = uint64_t{0}](BranchBatch* batch) mutable -> Result<bool> {
    if (done >= branches) return false;
    size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, branches - done));
    stream->NextBatch(n, batch);
    done += n;
    return true;
  };
}

void FillSweep(const std::string& name, const SweepFlags& f, const pipeline::HptSweepResult& r,
               v1::SimSweepWorkload* out) {
  out->set_workload(name);
  out->set_seed(static_cast<int64_t>(f.seed));
  out->set_branches(static_cast<int64_t>(f.branches));
  out->set_paths_distinct(static_cast<int64_t>(r.paths_distinct));
  for (const auto& c : r.cells) {
    v1::SimSweepCell& cell = *out->add_cells();
    cell.set_hpt_entries(static_cast<int32_t>(c.config.entries));
    cell.set_hpt_ways(static_cast<int32_t>(c.config.ways));
    cell.set_overlap_pct(c.overlap);
    cell.set_dynamic_overlap_pct(c.dynamic_overlap);
    cell.set_dynamic_windows(static_cast<int64_t>(c.dynamic_windows));
  }
}

// One Markdown table: entries down, ways across; '-' where the geometry was refused.
void PrintSweepTable(const std::string& name, const SweepFlags& f,
                     const pipeline::HptSweepResult& r, bool dynamic) {
  const pipeline::HptSweepOptions& o = f.options;
  std::printf("\n%s overlap %%, workload %s (seed %" PRIu64 ", %" PRIu64
              " branches, %zu distinct %s paths%s)\n\n",
              dynamic ? "Dynamic" : "Complete", name.c_str(), f.seed, f.branches, r.paths_distinct,
              hwmodel::PathStackConfigName(o.stack).c_str(),
              dynamic ? (", " + std::to_string(o.dynamic_window) + "-branch windows").c_str() : "");
  std::printf("| entries |");
  for (uint32_t w : o.ways) std::printf(" %u-way |", w);
  std::printf("\n|---:|");
  for (size_t i = 0; i < o.ways.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (uint32_t e : o.sizes) {
    std::printf("| %u |", e);
    for (uint32_t w : o.ways) {
      auto cell = r.Find(e, w);
      if (cell) {
        std::printf(" %.1f |", dynamic ? cell->dynamic_overlap : cell->overlap);
      } else {
        std::printf(" - |");
      }
    }
    std::printf("\n");
  }
}

// Figure 5.7-style sweep: complete (and dynamic) overlap for every HPT size x associativity, one
// pass per workload.
int RunSweep(Args& args) {
  SweepFlags f;
  if (auto problems = ParseSweepFlags(args, &f); !problems.empty())
    return UsageError("sim", problems);
  v1::SimSweepReport report;
  for (const auto& name : f.workloads) {
    auto spec = synth::BundledWorkload(name, f.seed);
    if (!spec.ok()) return UsageError("sim", {spec.status().message()});
    ApplyKnobs(args, &spec.value());
    auto stream = synth::SyntheticStream::Create(*spec);
    if (!stream.ok()) return UsageError("sim", {"cannot build " + name});
    auto result = pipeline::SweepHptGrid(f.options, SyntheticBatches(&*stream, f.branches));
    if (!result.ok()) return UsageError("sim", {"cannot build " + name});
    if (f.json) {
      FillSweep(name, f, *result, report.add_workloads());
      continue;
    }
    for (bool dynamic : {false, true}) PrintSweepTable(name, f, *result, dynamic);
  }
  if (f.json) PrintJson(report);
  return kExitOk;
}

int RunSim(Args& args) {
  if (args.Has("sweep")) return RunSweep(args);
  if (args.Has("subpaths") || args.Has("calls")) return RunStreamProfiles(args);
  SimFlags f;
  if (auto problems = ParseSimFlags(args, &f); !problems.empty())
    return UsageError("sim", problems);
  auto sim = pipeline::PathEngineSim::Create(f.options);
  if (!sim.ok()) return UsageError("sim", {sim.status().message()});
  auto result = sim->Run([&](BranchBatch* batch) { return f.source->Next(batch); });
  if (!result.ok()) {
    std::fprintf(stderr, "pathctl sim: %s\n", result.status().ToString().c_str());
    return kExitError;
  }
  if (f.json) {
    PrintSimJson(f.source_desc, *result);
  } else {
    PrintText(f.source_desc, *result);
  }
  return result->branches ? kExitOk : kExitNoData;
}

constexpr char kUsage[] =
    R"(usage: pathctl sim [--workload NAME --seed N | --pbs FILE] [--branches N] [OPTIONS]

Runs the path engine on a synthetic workload (loops, branchy, calls, large) or a .pbs stream and
compares what it finds with the exact profile of the same stream.
--functions, --diamonds, --call-levels, --skew, --correlation and --zipf override the workload's
knobs (see synth/include/pathprof/synth/workload.h). --window W --period P: window sampling, windows of W
taken branches, one every P*W, scored by the window estimator (instead of the HPT).
--sample-interval N --burst-length N: bursty sampling ([HPS 2005]) of calls and back-edges
before the HPT. --sweep: complete and dynamic overlap for HPT sizes x ways (Figure 5.7 style)
over --workload (default all).
Stream profiles (instead of the path engine; both may be given): --subpaths, OSP hot subpaths
([Oren 2002]): the top K with blocks, estimate, error bound, exact count (a second pass), f and
memory; --calls, hot call pairs and hot methods ([HPS 2005]) from the whole stream, or from its
samples with --sample-interval/--burst-length or --window/--period, with the overlap and HPS
overlap against the exact counts.)";

std::vector<Flag> SimFlagDeclarations() {
  return {
      StringFlag("workload", "NAME", "",
                 "bundled synthetic workload (default branchy; with --sweep, all)"),
      IntFlag("seed", "N", "1", 0, kMaxI64, "workload seed"),
      IntFlag("functions", "N", "", 1, 1000000, "workload knob"),
      IntFlag("diamonds", "N", "", 0, 1000000, "workload knob"),
      IntFlag("call-levels", "N", "", 0, 1000, "workload knob"),
      DoubleFlag("skew", "X", "", 0, 1e6, "workload knob"),
      DoubleFlag("correlation", "X", "", 0, 1, "workload knob"),
      DoubleFlag("zipf", "X", "", 0, 100, "workload knob"),
      StringFlag("pbs", "FILE", "", "read branches from a .pbs file instead"),
      IntFlag("branches", "N", "20000000", 1, kMaxI64, "branches to run (a .pbs file: all)"),
      StringFlag("paths", "KIND", "bl", "bl | wpp | extended:loops:N | extended:calls:N"),
      StringFlag("hpt", "ENTRIESxWAYS", "512x4", "Hot Path Table geometry"),
      WordsFlag("index", {"xor", "start"}, "xor", "HPT index function"),
      WordsFlag("replacement", {"lfu", "lru"}, "lfu", "HPT replacement"),
      WordsFlag("metric", {"count", "instructions", "cycles", "mispredictions"}, "count",
                "what a path weighs")
          .Accepts([](const std::string& s) {
            hwmodel::Metric m;
            return hwmodel::ParseMetric(s, &m);
          }),
      IntFlag("window", "W", "", 0, kMaxI64, "window sampling: taken branches per window"),
      IntFlag("period", "P", "", 0, kMaxI64, "window sampling: one window every P*W branches"),
      IntFlag("sample-interval", "N", "", 0, kMaxI64, "bursty sampling: branches between bursts"),
      IntFlag("burst-length", "N", "", 0, kMaxI64, "bursty sampling: branches per burst"),
      IntFlag("top", "K", "10", 0, 1000000, "hot paths to list"),
      IntFlag("dynamic-window", "N", "10000000", 1, kMaxI64,
              "branches per window for the dynamic overlap"),
      BoolFlag("json", "machine-readable output"),
      BoolFlag("sweep", "complete and dynamic overlap for HPT sizes x ways"),
      StringFlag("sizes", "N,N,...", "128,256,512,1024,2048", "with --sweep: HPT entries"),
      StringFlag("ways", "N,N,...", "2,4,8,16,32", "with --sweep: HPT associativities"),
      BoolFlag("subpaths", "OSP hot subpaths (see above)"),
      IntFlag("osp-entries", "M", "4096", 1, 1 << 24,
              "reservoir bound m in entries (formerly --osp-memory)"),
      IntFlag("osp-max-length", "L", "32", 1, 1024, "longest subpath, a power of two"),
      DoubleFlag("osp-gain", "G", "100", 1e-9, 1e12, "eq. 2.13's expected gain"),
      DoubleFlag("osp-min-f", "F", "2", 0, 1e12, "floor on f"),
      IntFlag("osp-seed", "N", "7", 0, kMaxI64, "OSP seed"),
      DoubleFlag("confidence", "C", "0.95", 0.5, 0.999999, "confidence of the error bounds"),
      BoolFlag("calls", "hot call pairs and hot methods (see above)"),
  };
}

PATHCTL_COMMAND(Command{"sim", "run the path engine on a synthetic workload or .pbs stream", kUsage,
                        SimFlagDeclarations(), RunSim});

}  // namespace
}  // namespace pathctl
