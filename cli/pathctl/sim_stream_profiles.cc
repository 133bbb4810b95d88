#include "pathctl/sim_stream_profiles.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathctl/json_writer.h"
#include "pathctl/sim_source.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/profiles/accuracy.h"
#include "pathprof/profiles/hps_profiles.h"
#include "pathprof/profiles/osp_exact.h"
#include "pathprof/profiles/osp_report.h"
#include "pathprof/profiles/osp_sampler.h"

namespace pathctl {
namespace {

using namespace pathprof;

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

struct Options {
  bool subpaths = false;
  bool calls = false;
  bool json = false;
  size_t top = 10;
  profiles::OspConfig osp;
  double confidence = 0.95;
  // Call sampling: bursty (paper 001) or windows of taken branches; neither = the whole stream.
  std::optional<hwmodel::BurstyConfig> bursty;
  uint64_t window = 0, period = 0;
};

Result<Options> ParseOptions(Args& args) {
  Options o;
  o.subpaths = args.Has("subpaths");
  o.calls = args.Has("calls");
  o.json = args.Has("json");
  const long long top = args.GetInt("top", 10, 0, 1000000);
  const long long memory = args.GetInt("osp-entries", 4096, 1, 1 << 24);  // was --osp-memory
  const long long max_length = args.GetInt("osp-max-length", 32, 1, 1024);
  o.osp.expected_gain = args.GetDouble("osp-gain", 100, 1e-9, 1e12);
  o.osp.min_f = args.GetDouble("osp-min-f", 2, 0, 1e12);
  o.osp.seed = static_cast<uint64_t>(args.GetInt("osp-seed", 7, 0, kMaxI64));
  o.confidence = args.GetDouble("confidence", 0.95, 0.5, 0.999999);
  const long long interval = args.GetInt("sample-interval", -1, 0, kMaxI64);
  const long long burst = args.GetInt("burst-length", 0, 0, kMaxI64);
  const long long window = args.GetInt("window", 0, 0, kMaxI64),
                  period = args.GetInt("period", 0, 0, kMaxI64);
  if (top < 0) return Error(ErrorCode::kInvalidArgument, "--top must be >= 0");
  if (memory < 1) return Error(ErrorCode::kInvalidArgument, "--osp-entries must be >= 1 entry");
  if (!(o.confidence > 0 && o.confidence < 1))
    return Error(ErrorCode::kInvalidArgument, "--confidence must be in (0, 1), e.g. 0.95");
  if (!(o.osp.expected_gain > 0) || !(o.osp.min_f >= 1))
    return Error(ErrorCode::kInvalidArgument, "--osp-gain must be > 0 and --osp-min-f >= 1");
  auto lengths = profiles::OspLengthDistribution::Geometric(
      static_cast<uint32_t>(std::clamp<long long>(max_length, 0, 1 << 20)));
  if (!lengths.ok() || max_length > static_cast<long long>(profiles::SubpathMatcher::kMaxLength))
    return Error(
        ErrorCode::kInvalidArgument,
        "--osp-max-length must be a power of two in 2..1024, got " + std::to_string(max_length));
  o.top = static_cast<size_t>(top);
  o.osp.max_entries = static_cast<size_t>(memory);
  o.osp.lengths = *lengths;
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
    o.bursty = bc;
  }
  o.window = static_cast<uint64_t>(std::max(0LL, window));
  o.period = static_cast<uint64_t>(std::max(0LL, period));
  return o;
}

// Walks every batch of a freshly opened source.
template <typename Fn>
Status ForEachBatch(Args& args, Fn&& fn) {
  std::string unused;
  auto source = Source::Open(args, &unused);
  if (!source.ok()) return source.status();
  BranchBatch batch;
  for (;;) {
    auto more = (*source)->Next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
    fn(batch);
  }
}

// ---- subpaths ----

struct SubpathRow {
  profiles::OspReportEntry entry;
  uint64_t exact = 0;
  double error = 0;  // (estimate - exact) / exact
  bool within_bound = false;
};

struct SubpathResult {
  profiles::OspReport report;
  std::vector<SubpathRow> rows;
  uint32_t max_length = 0;
  size_t covered = 0;
  double median_error_top10 = 0;  // |error|, over the first min(10, rows) rows
};

std::unique_ptr<profiles::OspReservoir> MakeReservoir(const Options& o, uint64_t blocks) {
  profiles::OspConfig c = o.osp;
  c.expected_blocks = static_cast<double>(std::max<uint64_t>(blocks, 1));
  return std::move(profiles::OspReservoir::Create(c)).value();
}

// Scores the report against a second pass that counts the reported subpaths exactly.
Status ScoreSubpaths(Args& args, SubpathResult* r) {
  std::vector<std::vector<profiles::BlockId>> targets;
  for (const auto& e : r->report.entries) targets.push_back(e.blocks);
  // One matcher per thread: each thread's blocks are their own stream, as for the samplers.
  std::unordered_map<uint32_t, std::unique_ptr<profiles::SubpathMatcher>> matchers;
  PATHPROF_RETURN_IF_ERROR(ForEachBatch(args, [&](const BranchBatch& b) {
    auto& m = matchers[b.tid];
    if (!m) m = std::make_unique<profiles::SubpathMatcher>(targets);
    if (b.gap_before) m->Gap();
    profiles::ForEachBlock(b, [&](profiles::BlockId id) { m->Feed(id); });
  }));
  std::vector<double> errors;
  for (const auto& e : r->report.entries) {
    SubpathRow row;
    row.entry = e;
    for (const auto& [tid, m] : matchers) row.exact += m->Count(e.blocks);
    const double truth = static_cast<double>(row.exact);
    row.error = row.exact ? (e.estimated_count - truth) / truth : 0;
    row.within_bound = e.count_low <= truth && truth <= e.count_high;
    r->covered += row.within_bound;
    if (errors.size() < 10) errors.push_back(std::abs(row.error));
    r->rows.push_back(std::move(row));
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const size_t n = errors.size();
    r->median_error_top10 = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  }
  return Status::Ok();
}

void WriteSubpathsJson(const SubpathResult& r, JsonWriter& j) {
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

void PrintSubpathsText(const SubpathResult& r) {
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

struct Ranked {
  std::string key;  // "0xsite->0xtarget" or "0xfunction"
  double estimate = 0;
  double exact = 0;
  size_t exact_rank = 0;  // 0: never seen in the exact counts
};

struct CallsSection {
  size_t distinct_exact = 0, distinct_estimate = 0;
  double overlap = 0, hps_overlap = 0;
  std::vector<Ranked> top;
};

struct CallsResult {
  std::string mode = "full";
  double sampling_period = 1;
  uint64_t calls_exact = 0, calls_sampled = 0;
  CallsSection pairs, methods;
};

template <typename K, typename KeyFn>
CallsSection Score(const std::vector<std::pair<K, uint64_t>>& exact_sorted,
                   const std::vector<std::pair<K, uint64_t>>& estimate_sorted, double scale,
                   size_t top, KeyFn key_of) {
  CallsSection s;
  s.distinct_exact = exact_sorted.size();
  s.distinct_estimate = estimate_sorted.size();
  profiles::WeightedProfile<std::string> ew, sw;
  std::unordered_map<std::string, std::pair<size_t, double>> exact_of;
  for (size_t i = 0; i < exact_sorted.size(); ++i) {
    std::string k = key_of(exact_sorted[i].first);
    ew.emplace_back(k, static_cast<double>(exact_sorted[i].second));
    exact_of.emplace(std::move(k), std::make_pair(i + 1, double(exact_sorted[i].second)));
  }
  for (const auto& [key, w] : estimate_sorted) sw.emplace_back(key_of(key), double(w) * scale);
  s.overlap = profiles::OverlapPercent(ew, sw);
  s.hps_overlap = profiles::HpsOverlapPercent(ew, sw);
  for (size_t i = 0; i < sw.size() && i < top; ++i) {
    Ranked r;
    r.key = sw[i].first;
    r.estimate = sw[i].second;
    if (auto it = exact_of.find(r.key); it != exact_of.end()) {
      r.exact_rank = it->second.first;
      r.exact = it->second.second;
    }
    s.top.push_back(r);
  }
  return s;
}

void WriteCallsSection(const char* name, const char* key_name, const CallsSection& s,
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

void WriteCallsJson(const CallsResult& r, JsonWriter& j) {
  j.Key("calls").BeginObject();
  j.Key("mode").String(r.mode);
  j.Key("sampling_period").Double(r.sampling_period);
  j.Key("calls_exact").Uint(r.calls_exact);
  j.Key("calls_sampled").Uint(r.calls_sampled);
  WriteCallsSection("call_pairs", "pair", r.pairs, j);
  WriteCallsSection("methods", "function", r.methods, j);
  j.EndObject();
}

void PrintCallsSection(const char* title, const CallsSection& s) {
  std::printf("\n%s: %zu distinct (exact), %zu sampled; overlap %.2f%%, HPS overlap %.2f%%\n",
              title, s.distinct_exact, s.distinct_estimate, s.overlap, s.hps_overlap);
  std::printf("%4s  %-36s %14s %14s %6s\n", "rank", "key", "estimate", "exact", "rank");
  for (size_t i = 0; i < s.top.size(); ++i) {
    const auto& r = s.top[i];
    std::printf("%4zu  %-36s %14.0f %14.0f %6zu\n", i + 1, r.key.c_str(), r.estimate, r.exact,
                r.exact_rank);
  }
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
  const Options& o = *parsed;

  // f starts at n / (m G) (eq. 2.13), so the reservoir needs the stream's length up front: the
  // --branches cut of a synthetic stream, else one counting pass.
  uint64_t blocks = 0;
  if (o.subpaths) {
    auto counted = ForEachBatch(args, [&](const BranchBatch& b) { blocks += b.events.size(); });
    if (!counted.ok()) {
      std::fprintf(stderr, "pathctl sim: %s\n", counted.ToString().c_str());
      return kExitError;
    }
  }
  std::unique_ptr<profiles::OspReservoir> reservoir;
  std::unordered_map<uint32_t, std::unique_ptr<profiles::OspThreadSampler>> samplers;
  if (o.subpaths) reservoir = MakeReservoir(o, blocks);

  profiles::HotCallPairs exact_pairs, sampled_pairs;
  profiles::HotMethods exact_methods, sampled_methods;
  std::optional<hwmodel::BurstyController> bursty;
  CallsResult calls;
  if (o.bursty) {
    bursty.emplace(hwmodel::BurstyController::Create(*o.bursty).value());
    calls.mode = "bursty";
    calls.sampling_period = o.bursty->SamplingPeriod();
  } else if (o.window) {
    calls.mode = "window";
    calls.sampling_period = static_cast<double>(o.period);
  }

  uint64_t branches = 0;
  std::vector<BranchBatch> sampled;
  BranchBatch piece;
  Status pass = ForEachBatch(args, [&](const BranchBatch& b) {
    branches += b.events.size();
    if (o.subpaths) {
      auto& s = samplers[b.tid];
      if (!s) s = std::make_unique<profiles::OspThreadSampler>(reservoir.get(), b.tid);
      s->Feed(b);
    }
    if (!o.calls) return;
    exact_pairs.AddBatch(b);
    exact_methods.AddBatch(b);
    sampled.clear();
    if (bursty) {
      bursty->Apply(b, &sampled);
    } else if (o.window) {
      for (const auto& [from, to] :
           hwmodel::SliceTakenWindows(b.events, o.window, o.window * o.period, 0)) {
        piece.window = true;
        piece.events.assign(b.events.begin() + static_cast<ptrdiff_t>(from),
                            b.events.begin() + static_cast<ptrdiff_t>(to));
        sampled.push_back(piece);
      }
    }
    if (!bursty && !o.window) {
      sampled_pairs.AddBatch(b);
      sampled_methods.AddBatch(b);
    }
    for (const auto& s : sampled) {
      sampled_pairs.AddBatch(s);
      sampled_methods.AddBatch(s);
    }
  });
  samplers.clear();  // flushes the block counts
  if (!pass.ok()) {
    std::fprintf(stderr, "pathctl sim: %s\n", pass.ToString().c_str());
    return kExitError;
  }

  SubpathResult subpaths;
  if (o.subpaths) {
    profiles::OspReportOptions ro;
    ro.top_k = o.top;
    ro.confidence = o.confidence;
    auto report = profiles::BuildOspReport(*reservoir, ro);
    if (!report.ok()) return UsageError("sim", {report.status().message()});
    subpaths.report = std::move(report).value();
    subpaths.max_length = o.osp.lengths.max_length();
    if (Status s = ScoreSubpaths(args, &subpaths); !s.ok()) {
      std::fprintf(stderr, "pathctl sim: %s\n", s.ToString().c_str());
      return kExitError;
    }
  }
  if (o.calls) {
    calls.calls_exact = exact_pairs.total();
    calls.calls_sampled = sampled_pairs.total();
    const double scale = calls.sampling_period;
    calls.pairs =
        Score(exact_pairs.Top(exact_pairs.Shares().size()),
              sampled_pairs.Top(sampled_pairs.Shares().size()), scale, o.top,
              [](const profiles::CallPair& p) { return Hex(p.call_site) + "->" + Hex(p.target); });
    calls.methods = Score(exact_methods.Top(exact_methods.Shares().size()),
                          sampled_methods.Top(sampled_methods.Shares().size()), scale, o.top,
                          [](uint64_t f) { return Hex(f); });
  }

  if (o.json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("source").String(source_desc);
    j.Key("branches").Uint(branches);
    if (o.subpaths) WriteSubpathsJson(subpaths, j);
    if (o.calls) WriteCallsJson(calls, j);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("pathctl sim: %s, %" PRIu64 " branches\n", source_desc.c_str(), branches);
    if (o.subpaths) PrintSubpathsText(subpaths);
    if (o.calls) {
      std::printf("\ncalls: %" PRIu64 " exact, %" PRIu64 " sampled (mode %s, period %.1f)\n",
                  calls.calls_exact, calls.calls_sampled, calls.mode.c_str(),
                  calls.sampling_period);
      PrintCallsSection("hot call pairs", calls.pairs);
      PrintCallsSection("hot methods", calls.methods);
    }
  }
  return branches ? kExitOk : kExitNoData;
}

}  // namespace pathctl
