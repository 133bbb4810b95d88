// The work is pipeline/offline_stream_profiles.h; this file reads flags and prints.
#include "pathctl/sim_stream_profiles.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/sim_source.h"
#include "pathprof/api/convert.h"
#include "pathprof/core/hex.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/offline_stream_profiles.h"
#include "pathprof/profiles/osp_exact.h"
#include "pathprof/profiles/osp_lengths.h"
#include "pathprof/v1/sim.pb.h"

namespace pathctl {
namespace {

using namespace pathprof;

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
  const long long top = args.Int("top");
  const long long memory = args.Int("osp-entries");  // was --osp-memory
  const long long max_length = args.Int("osp-max-length");
  p.osp.expected_gain = args.Double("osp-gain");
  p.osp.min_f = args.Double("osp-min-f");
  p.osp.seed = static_cast<uint64_t>(args.Int("osp-seed"));
  p.confidence = args.Double("confidence");
  const long long interval = args.Has("sample-interval") ? args.Int("sample-interval") : -1;
  const long long burst = args.Int("burst-length");
  const long long window = args.Int("window"), period = args.Int("period");
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

void FillSubpaths(const pipeline::SubpathProfile& r, v1::SimSubpaths* out) {
  const auto& st = r.report.stats;
  out->set_blocks(static_cast<int64_t>(st.blocks_seen));
  out->set_max_length(static_cast<int32_t>(r.max_length));
  out->set_confidence(r.report.confidence);
  out->set_f(st.f);
  out->set_memory_limit_entries(static_cast<int64_t>(st.max_entries));
  out->set_entries(static_cast<int64_t>(st.entries));
  out->set_memory_bytes(static_cast<int64_t>(st.memory_bytes));
  out->set_sample_total(static_cast<int64_t>(st.sample_total));
  out->set_samples_kept(static_cast<int64_t>(st.samples_kept));
  out->set_resamples(static_cast<int64_t>(st.resamples));
  out->set_dropped_at_gaps(static_cast<int64_t>(st.dropped_at_gaps));
  out->set_reported(static_cast<int64_t>(r.rows.size()));
  out->set_within_bound(static_cast<int64_t>(r.covered));
  out->set_median_abs_error_top10(r.median_error_top10);
  for (const auto& row : r.rows) {
    const auto& e = row.entry;
    v1::SimSubpath& sp = *out->add_top();
    sp.set_length(static_cast<int32_t>(e.length));
    for (auto b : e.blocks) sp.add_blocks(b);
    sp.set_sample_count(static_cast<int64_t>(e.sample_count));
    sp.set_estimate(e.estimated_count);
    sp.set_error_bound(e.relative_error);
    sp.set_count_low(e.count_low);
    sp.set_count_high(e.count_high);
    sp.set_exact(static_cast<int64_t>(row.exact));
    sp.set_error(row.error);
    sp.set_within_bound(row.within_bound);
  }
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
      blocks += (k ? " " : "") + pathprof::HexAddress(row.entry.blocks[k]);
    if (row.entry.blocks.size() > 4) blocks += " ...";
    std::printf("%4zu %4u %9" PRIu64 " %14.0f %7.2f%% %14" PRIu64 " %+7.2f%%%s %s\n", i + 1,
                row.entry.length, row.entry.sample_count, row.entry.estimated_count,
                100 * row.entry.relative_error, row.exact, 100 * row.error,
                row.within_bound ? " " : "!", blocks.c_str());
  }
}

// ---- calls ----

template <typename Ranking>
void FillRankingScores(const pipeline::CallRanking& s, Ranking* out) {
  out->set_distinct_exact(static_cast<int64_t>(s.distinct_exact));
  out->set_distinct_estimate(static_cast<int64_t>(s.distinct_estimate));
  out->set_overlap_pct(s.overlap);
  out->set_hps_overlap_pct(s.hps_overlap);
}

void FillCallPairs(const pipeline::CallRanking& s, v1::SimCallPairs* out) {
  FillRankingScores(s, out);
  for (const auto& r : s.top) {
    v1::SimCallPair& p = *out->add_top();
    p.set_call_site(r.from);
    p.set_target(r.to);
    p.set_estimate(r.estimate);
    p.set_exact(r.exact);
    p.set_exact_rank(static_cast<int64_t>(r.exact_rank));
  }
}

void FillMethods(const pipeline::CallRanking& s, v1::SimMethods* out) {
  FillRankingScores(s, out);
  for (const auto& r : s.top) {
    v1::SimMethod& m = *out->add_top();
    m.set_function(r.to);
    m.set_estimate(r.estimate);
    m.set_exact(r.exact);
    m.set_exact_rank(static_cast<int64_t>(r.exact_rank));
  }
}

void FillCalls(const pipeline::CallProfile& r, v1::SimCalls* out) {
  out->set_mode(pathprof::api::ToProto(r.mode));
  out->set_sampling_period(r.sampling_period);
  out->set_calls_exact(static_cast<int64_t>(r.calls_exact));
  out->set_calls_sampled(static_cast<int64_t>(r.calls_sampled));
  FillCallPairs(r.pairs, out->mutable_call_pairs());
  FillMethods(r.methods, out->mutable_methods());
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
              calls.calls_exact, calls.calls_sampled,
              std::string(pipeline::SimModeName(calls.mode)).c_str(), calls.sampling_period);
  PrintCallsSection("hot call pairs", calls.pairs);
  PrintCallsSection("hot methods", calls.methods);
}

void Print(const Options& o, const std::string& source_desc, const pipeline::StreamProfiles& r) {
  const pipeline::StreamProfileOptions& p = o.profile;
  if (o.json) {
    v1::SimStreamProfilesReport report;
    report.set_source(source_desc);
    report.set_branches(static_cast<int64_t>(r.branches));
    if (p.subpaths) FillSubpaths(r.subpaths, report.mutable_subpaths());
    if (p.calls) FillCalls(r.calls, report.mutable_calls());
    PrintJson(report);
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
