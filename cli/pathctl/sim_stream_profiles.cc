// The work is pipeline/offline_stream_profiles.h; this file reads flags and prints.
#include "pathctl/sim_stream_profiles.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "pathctl/json_writer.h"
#include "pathctl/sim_source.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/offline_stream_profiles.h"
#include "pathprof/profiles/osp_exact.h"
#include "pathprof/profiles/osp_lengths.h"

namespace pathctl {
namespace {

using namespace pathprof;

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// What `pathctl sim --subpaths / --calls` was asked for.
struct Options {
  bool json = false;
  pipeline::StreamProfileOptions profile;
};

Result<Options> ParseOptions(Args& args) {
  Options o;
  pipeline::StreamProfileOptions& p = o.profile;
  p.subpaths = args.Has("subpaths");
  p.calls = args.Has("calls");
  o.json = args.Has("json");
  const long long top = args.GetInt("top", 10, 0, 1000000);
  const long long memory = args.GetInt("osp-entries", 4096, 1, 1 << 24);  // was --osp-memory
  const long long max_length = args.GetInt("osp-max-length", 32, 1, 1024);
  p.osp.expected_gain = args.GetDouble("osp-gain", 100, 1e-9, 1e12);
  p.osp.min_f = args.GetDouble("osp-min-f", 2, 0, 1e12);
  p.osp.seed = static_cast<uint64_t>(args.GetInt("osp-seed", 7, 0, kMaxI64));
  p.confidence = args.GetDouble("confidence", 0.95, 0.5, 0.999999);
  const long long interval = args.GetInt("sample-interval", -1, 0, kMaxI64);
  const long long burst = args.GetInt("burst-length", 0, 0, kMaxI64);
  const long long window = args.GetInt("window", 0, 0, kMaxI64),
                  period = args.GetInt("period", 0, 0, kMaxI64);
  if (top < 0) return Error(ErrorCode::kInvalidArgument, "--top must be >= 0");
  if (memory < 1) return Error(ErrorCode::kInvalidArgument, "--osp-entries must be >= 1 entry");
  if (!(p.confidence > 0 && p.confidence < 1))
    return Error(ErrorCode::kInvalidArgument, "--confidence must be in (0, 1), e.g. 0.95");
  if (!(p.osp.expected_gain > 0) || !(p.osp.min_f >= 1))
    return Error(ErrorCode::kInvalidArgument, "--osp-gain must be > 0 and --osp-min-f >= 1");
  auto lengths = profiles::OspLengthDistribution::Geometric(
      static_cast<uint32_t>(std::clamp<long long>(max_length, 0, 1 << 20)));
  if (!lengths.ok() || max_length > static_cast<long long>(profiles::SubpathMatcher::kMaxLength))
    return Error(
        ErrorCode::kInvalidArgument,
        "--osp-max-length must be a power of two in 2..1024, got " + std::to_string(max_length));
  p.top = static_cast<size_t>(top);
  p.osp.max_entries = static_cast<size_t>(memory);
  p.osp.lengths = *lengths;
  const bool bursty = interval >= 0 || burst > 0, windowed = window > 0 || period > 0;
  if (bursty && windowed)
    return Error(ErrorCode::kInvalidArgument,
                 "--window/--period and --sample-interval/--burst-length exclude each other");
  if (windowed && (window < 1 || period < 1))
    return Error(ErrorCode::kInvalidArgument,
                 "window sampling needs --window W >= 1 and --period P >= 1");
  if (bursty) {
    hwmodel::BurstyConfig bc;
    bc.sample_interval = static_cast<uint64_t>(std::max(0LL, interval));
    bc.burst_length = static_cast<uint64_t>(burst > 0 ? burst : 100);
    p.bursty = bc;
  }
  p.window = static_cast<uint64_t>(std::max(0LL, window));
  p.period = static_cast<uint64_t>(std::max(0LL, period));
  return o;
}

// Opens the stream of --workload or --pbs afresh for each pass the profiles make over it.
pipeline::OpenBatchesFn SourceOpener(Args& args) {
  return [&args]() -> Result<pipeline::NextBatchFn> {
    std::string unused;
    PATHPROF_ASSIGN_OR_RETURN(std::shared_ptr<Source> source, Source::Open(args, &unused));
    return pipeline::NextBatchFn([source](BranchBatch* batch) { return source->Next(batch); });
  };
}

// ---- subpaths ----

void WriteSubpathsJson(const pipeline::SubpathProfile& r, JsonWriter& j) {
  const auto& st = r.report.stats;
  j.Key("subpaths").BeginObject();
  j.Key("blocks").Uint(st.blocks_seen);
  j.Key("max_length").Uint(r.max_length);
  j.Key("confidence").Double(r.report.confidence);
  j.Key("f").Double(st.f);
  j.Key("memory_limit_entries").Uint(st.max_entries);
  j.Key("entries").Uint(st.entries);
  j.Key("memory_bytes").Uint(st.memory_bytes);
  j.Key("sample_total").Uint(st.sample_total);
  j.Key("samples_kept").Uint(st.samples_kept);
  j.Key("resamples").Uint(st.resamples);
  j.Key("dropped_at_gaps").Uint(st.dropped_at_gaps);
  j.Key("reported").Uint(r.rows.size());
  j.Key("within_bound").Uint(r.covered);
  j.Key("median_abs_error_top10").Double(r.median_error_top10);
  j.Key("top").BeginArray();
  for (const auto& row : r.rows) {
    const auto& e = row.entry;
    j.BeginObject();
    j.Key("length").Uint(e.length);
    j.Key("blocks").BeginArray();
    for (auto b : e.blocks) j.String(Hex(b));
    j.EndArray();
    j.Key("sample_count").Uint(e.sample_count);
    j.Key("estimate").Double(e.estimated_count);
    j.Key("error_bound").Double(e.relative_error);
    j.Key("count_low").Double(e.count_low);
    j.Key("count_high").Double(e.count_high);
    j.Key("exact").Uint(row.exact);
    j.Key("error").Double(row.error);
    j.Key("within_bound").Bool(row.within_bound);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void PrintSubpathsText(const pipeline::SubpathProfile& r) {
  const auto& st = r.report.stats;
  std::printf("OSP: %" PRIu64
              " blocks, lengths 2..%u, f = %.2f, %zu of %zu entries (%zu bytes), "
              "%" PRIu64 " samples, %" PRIu64 " resamples\n",
              st.blocks_seen, r.max_length, st.f, st.entries, st.max_entries, st.memory_bytes,
              st.sample_total, st.resamples);
  std::printf(
      "%zu of %zu %.0f%% intervals hold the exact count; median |error| of the top 10 "
      "%.2f%%\n\n",
      r.covered, r.rows.size(), 100 * r.report.confidence, 100 * r.median_error_top10);
  std::printf("%4s %4s %9s %14s %8s %14s %8s  %s\n", "rank", "len", "samples", "estimate", "bound",
              "exact", "error", "blocks");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    std::string blocks;
    for (size_t k = 0; k < row.entry.blocks.size() && k < 4; ++k)
      blocks += (k ? " " : "") + Hex(row.entry.blocks[k]);
    if (row.entry.blocks.size() > 4) blocks += " ...";
    std::printf("%4zu %4u %9" PRIu64 " %14.0f %7.2f%% %14" PRIu64 " %+7.2f%%%s %s\n", i + 1,
                row.entry.length, row.entry.sample_count, row.entry.estimated_count,
                100 * row.entry.relative_error, row.exact, 100 * row.error,
                row.within_bound ? " " : "!", blocks.c_str());
  }
}

// ---- calls ----

void WriteCallsSection(const char* name, const char* key_name, const pipeline::CallRanking& s,
                       JsonWriter& j) {
  j.Key(name).BeginObject();
  j.Key("distinct_exact").Uint(s.distinct_exact);
  j.Key("distinct_estimate").Uint(s.distinct_estimate);
  j.Key("overlap_pct").Double(s.overlap);
  j.Key("hps_overlap_pct").Double(s.hps_overlap);
  j.Key("top").BeginArray();
  for (const auto& r : s.top) {
    j.BeginObject();
    j.Key(key_name).String(r.key);
    j.Key("estimate").Double(r.estimate);
    j.Key("exact").Double(r.exact);
    j.Key("exact_rank").Uint(r.exact_rank);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void WriteCallsJson(const pipeline::CallProfile& r, JsonWriter& j) {
  j.Key("calls").BeginObject();
  j.Key("mode").String(r.mode);
  j.Key("sampling_period").Double(r.sampling_period);
  j.Key("calls_exact").Uint(r.calls_exact);
  j.Key("calls_sampled").Uint(r.calls_sampled);
  WriteCallsSection("call_pairs", "pair", r.pairs, j);
  WriteCallsSection("methods", "function", r.methods, j);
  j.EndObject();
}

void PrintCallsSection(const char* title, const pipeline::CallRanking& s) {
  std::printf("\n%s: %zu distinct (exact), %zu sampled; overlap %.2f%%, HPS overlap %.2f%%\n",
              title, s.distinct_exact, s.distinct_estimate, s.overlap, s.hps_overlap);
  std::printf("%4s  %-36s %14s %14s %6s\n", "rank", "key", "estimate", "exact", "rank");
  for (size_t i = 0; i < s.top.size(); ++i) {
    const auto& r = s.top[i];
    std::printf("%4zu  %-36s %14.0f %14.0f %6zu\n", i + 1, r.key.c_str(), r.estimate, r.exact,
                r.exact_rank);
  }
}

void PrintCallsText(const pipeline::CallProfile& calls) {
  std::printf("\ncalls: %" PRIu64 " exact, %" PRIu64 " sampled (mode %s, period %.1f)\n",
              calls.calls_exact, calls.calls_sampled, calls.mode.c_str(), calls.sampling_period);
  PrintCallsSection("hot call pairs", calls.pairs);
  PrintCallsSection("hot methods", calls.methods);
}

void Print(const Options& o, const std::string& source_desc, const pipeline::StreamProfiles& r) {
  const pipeline::StreamProfileOptions& p = o.profile;
  if (o.json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("source").String(source_desc);
    j.Key("branches").Uint(r.branches);
    if (p.subpaths) WriteSubpathsJson(r.subpaths, j);
    if (p.calls) WriteCallsJson(r.calls, j);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
    return;
  }
  std::printf("pathctl sim: %s, %" PRIu64 " branches\n", source_desc.c_str(), r.branches);
  if (p.subpaths) PrintSubpathsText(r.subpaths);
  if (p.calls) PrintCallsText(r.calls);
}

}  // namespace

int RunStreamProfiles(Args& args) {
  auto parsed = ParseOptions(args);
  std::string source_desc;
  auto probe = Source::Open(args, &source_desc);  // validates --workload/--pbs and their knobs
  if (auto p = args.Problems(); !p.empty()) return UsageError("sim", p);
  if (!parsed.ok()) return UsageError("sim", {parsed.status().message()});
  if (!probe.ok()) return UsageError("sim", {probe.status().message()});
  probe->reset();
  auto result = pipeline::ProfileStream(parsed->profile, SourceOpener(args));
  if (!result.ok()) {
    std::fprintf(stderr, "pathctl sim: %s\n", result.status().ToString().c_str());
    return kExitError;
  }
  Print(*parsed, source_desc, *result);
  return result->branches ? kExitOk : kExitNoData;
}

}  // namespace pathctl
