// pathctl sim: runs the path engine (path stack + Hot Path Table, or the window estimator) over a
// synthetic workload or a recorded .pbs stream and scores it against the exact profile.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathctl/sim_source.h"
#include "pathctl/sim_stream_profiles.h"
#include "pathprof/core/pbs.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/profiles/accuracy.h"
#include "pathprof/synth/executor.h"
#include "pathprof/synth/workload.h"

namespace pathctl {
namespace {

using namespace pathprof;
using hwmodel::CompletedPath;
using hwmodel::PathDescriptor;

Result<hwmodel::HotPathTableConfig> ParseHpt(Args& args) {
  hwmodel::HotPathTableConfig c;
  std::string geometry = args.Get("hpt", "512x4");
  unsigned entries = 0, ways = 0;
  char tail = 0;
  if (std::sscanf(geometry.c_str(), "%ux%u%c", &entries, &ways, &tail) != 2)
    return Error(ErrorCode::kInvalidArgument,
                 "--hpt expects ENTRIESxWAYS such as 512x4, got '" + geometry + "'");
  c.entries = entries;
  c.ways = ways;
  std::string index = args.Get("index", "xor");
  if (index == "xor") {
    c.index = hwmodel::HptIndex::kXor;
  } else if (index == "start") {
    c.index = hwmodel::HptIndex::kStart;
  } else {
    return Error(ErrorCode::kInvalidArgument, "--index expects xor or start, got '" + index + "'");
  }
  std::string repl = args.Get("replacement", "lfu");
  if (repl == "lfu") {
    c.replacement = hwmodel::HptReplacement::kLfu;
  } else if (repl == "lru") {
    c.replacement = hwmodel::HptReplacement::kLru;
  } else {
    return Error(ErrorCode::kInvalidArgument,
                 "--replacement expects lfu or lru, got '" + repl + "'");
  }
  std::string metric = args.Get("metric", "count");
  if (!hwmodel::ParseMetric(metric, &c.metric))
    return Error(
        ErrorCode::kInvalidArgument,
        "--metric expects count, instructions, cycles or mispredictions, got '" + metric + "'");
  PATHPROF_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::string OutcomeBits(const PathDescriptor& p) {
  std::string s;
  for (int i = 0; i < p.length; ++i) s += ((p.outcomes >> i) & 1) ? '1' : '0';
  return s;
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

profiles::WeightedProfile<PathDescriptor> ExactWeights(const hwmodel::ExactPathProfile& exact,
                                                       hwmodel::Metric m) {
  profiles::WeightedProfile<PathDescriptor> out;
  out.reserve(exact.size());
  for (const auto& [p, metrics] : exact.paths())
    out.emplace_back(p, static_cast<double>(metrics.Get(m)));
  return out;
}

profiles::WeightedProfile<PathDescriptor> HptWeights(const hwmodel::HotPathTable& hpt) {
  profiles::WeightedProfile<PathDescriptor> out;
  for (const auto& e : hpt.Sorted()) out.emplace_back(e.path, static_cast<double>(e.value));
  return out;
}

// One hot path line of the report.
struct TopRow {
  PathDescriptor path;
  double estimate = 0;
  double share = 0;
  double exact = 0;
  size_t exact_rank = 0;  // 0: not in the exact profile
  double relative_error = 0;
};

std::vector<TopRow> TopRows(const profiles::WeightedProfile<PathDescriptor>& estimate,
                            const hwmodel::ExactPathProfile& exact, hwmodel::Metric m, size_t k) {
  auto sorted = exact.Sorted(m);
  std::unordered_map<PathDescriptor, size_t, hwmodel::PathDescriptorHash> rank;
  for (size_t i = 0; i < sorted.size(); ++i) rank.emplace(sorted[i].first, i + 1);
  double total = 0;
  for (const auto& [p, w] : estimate) total += w;
  auto order = estimate;
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<TopRow> rows;
  for (size_t i = 0; i < order.size() && i < k; ++i) {
    TopRow r;
    r.path = order[i].first;
    r.estimate = order[i].second;
    r.share = total > 0 ? r.estimate / total : 0;
    r.exact = static_cast<double>(exact.Get(r.path).Get(m));
    if (auto it = rank.find(r.path); it != rank.end()) r.exact_rank = it->second;
    r.relative_error = r.exact > 0 ? (r.estimate - r.exact) / r.exact : 0;
    rows.push_back(r);
  }
  return rows;
}

struct SimResult {
  std::string source;
  std::string paths;
  std::string mode = "full";  // full | bursty | window
  hwmodel::HotPathTableConfig hpt;
  uint64_t branches = 0;
  uint64_t paths_completed = 0;
  size_t paths_distinct = 0;
  size_t hpt_valid = 0;
  double overlap = 0;
  double hps_overlap = 0;
  double ideal_overlap = 0;  // share of the exact profile in its `hpt_valid` heaviest paths
  double top100 = 0;         // share of the exact profile in its 100 heaviest paths (Fig. 5.2)
  std::optional<double> dynamic_overlap;
  size_t dynamic_windows = 0;
  uint64_t dynamic_window = 0;
  double sampling_period = 1;
  hwmodel::PathStackStats stack;
  hwmodel::HotPathTableStats table;
  std::vector<TopRow> top;
};

void PrintJson(const SimResult& r) {
  JsonWriter j;
  j.BeginObject();
  j.Key("source").String(r.source);
  j.Key("mode").String(r.mode);
  j.Key("paths").String(r.paths);
  j.Key("hpt_entries").Uint(r.hpt.entries);
  j.Key("hpt_ways").Uint(r.hpt.ways);
  j.Key("hpt_index").String(std::string(hwmodel::HptIndexName(r.hpt.index)));
  j.Key("hpt_replacement").String(std::string(hwmodel::HptReplacementName(r.hpt.replacement)));
  j.Key("metric").String(std::string(hwmodel::MetricName(r.hpt.metric)));
  j.Key("branches").Uint(r.branches);
  j.Key("paths_completed").Uint(r.paths_completed);
  j.Key("paths_distinct").Uint(r.paths_distinct);
  j.Key("hpt_valid_entries").Uint(r.hpt_valid);
  j.Key("overlap_pct").Double(r.overlap);
  j.Key("hps_overlap_pct").Double(r.hps_overlap);
  j.Key("ideal_overlap_pct").Double(r.ideal_overlap);
  j.Key("top100_share_pct").Double(r.top100);
  j.Key("dynamic_overlap_pct");
  if (r.dynamic_overlap) {
    j.Double(*r.dynamic_overlap);
  } else {
    j.Null();
  }
  j.Key("dynamic_windows").Uint(r.dynamic_windows);
  j.Key("dynamic_window_branches").Uint(r.dynamic_window);
  j.Key("sampling_period").Double(r.sampling_period);
  j.Key("stack").BeginObject();
  j.Key("gaps").Uint(r.stack.gaps);
  j.Key("splits").Uint(r.stack.splits);
  j.Key("unknown_start").Uint(r.stack.unknown_start);
  j.Key("truncated").Uint(r.stack.truncated);
  j.Key("overflow_dropped").Uint(r.stack.overflow_dropped);
  j.Key("return_mismatches").Uint(r.stack.return_mismatches);
  j.EndObject();
  j.Key("hpt_stats").BeginObject();
  j.Key("lookups").Uint(r.table.lookups);
  j.Key("hits").Uint(r.table.hits);
  j.Key("evictions").Uint(r.table.evictions);
  j.Key("saturations").Uint(r.table.saturations);
  j.EndObject();
  j.Key("top").BeginArray();
  for (const auto& t : r.top) {
    j.BeginObject();
    j.Key("start").String(Hex(t.path.start));
    j.Key("length").Uint(t.path.length);
    j.Key("outcomes").String(OutcomeBits(t.path));
    j.Key("estimate").Double(t.estimate);
    j.Key("share").Double(t.share);
    j.Key("exact").Double(t.exact);
    j.Key("exact_rank").Uint(t.exact_rank);
    j.Key("relative_error").Double(t.relative_error);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  std::printf("%s\n", j.str().c_str());
}

void PrintText(const SimResult& r) {
  std::printf("pathctl sim: %s, %" PRIu64 " branches, %s paths, mode %s\n", r.source.c_str(),
              r.branches, r.paths.c_str(), r.mode.c_str());
  if (r.mode != "window") {
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
    std::string bits = OutcomeBits(t.path);
    if (bits.size() > 32) bits = bits.substr(0, 29) + "...";
    std::printf("%4zu  %-14s %4u  %-32s %14.0f %6.2f%% %14.0f %6zu %+7.2f%%\n", i + 1,
                Hex(t.path.start).c_str(), t.path.length, bits.c_str(), t.estimate, 100 * t.share,
                t.exact, t.exact_rank, 100 * t.relative_error);
  }
}

// Accumulates one dynamic-overlap window.
struct WindowPair {
  std::optional<hwmodel::HotPathTable> hpt;
  hwmodel::ExactPathProfile exact;
};

// Cuts a batch at dynamic-window boundaries (every `window` events of the stream) so that each
// piece lies in one window; calls piece_fn(piece) for each and window_end() after a piece that
// completes a window. `in_window` carries the position across batches.
template <typename PieceFn, typename EndFn>
void SplitAtWindows(const BranchBatch& batch, uint64_t window, uint64_t* in_window,
                    BranchBatch* piece, PieceFn&& piece_fn, EndFn&& window_end) {
  size_t pos = 0;
  while (pos < batch.events.size()) {
    size_t n =
        static_cast<size_t>(std::min<uint64_t>(batch.events.size() - pos, window - *in_window));
    piece->pid = batch.pid;
    piece->tid = batch.tid;
    piece->time_ns = batch.time_ns;
    piece->window = batch.window;
    piece->gap_before = pos == 0 && batch.gap_before;
    piece->events.assign(batch.events.begin() + pos, batch.events.begin() + pos + n);
    piece_fn(static_cast<const BranchBatch&>(*piece));
    pos += n;
    *in_window += n;
    if (*in_window == window) {
      window_end();
      *in_window = 0;
    }
  }
}

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

// Figure 5.7-style sweep: complete (and dynamic) overlap for every HPT size x associativity, one
// pass per workload: the path stack runs once and feeds every table.
int RunSweep(Args& args) {
  const bool json = args.Has("json");
  std::string list = args.Get("workload", "all");
  const auto seed = static_cast<uint64_t>(args.GetInt("seed", 1, 0, kMaxI64));
  const auto branches = static_cast<uint64_t>(args.GetInt("branches", 20000000, 1, kMaxI64));
  const auto dyn = static_cast<uint64_t>(args.GetInt("dynamic-window", 10000000, 1, kMaxI64));
  auto stack_config = hwmodel::ParsePathStackConfig(args.Get("paths", "bl"));
  std::vector<std::string> problems;
  // The sweep sets the geometry from --sizes and --ways: a --hpt would be ignored.
  if (args.Has("hpt"))
    problems.push_back("--hpt does not go with --sweep (--sizes and --ways set the grid)");
  auto base = ParseHpt(args);
  auto sizes = ParseList(args.Get("sizes", "128,256,512,1024,2048"), &problems, "sizes");
  auto ways = ParseList(args.Get("ways", "2,4,8,16,32"), &problems, "ways");
  synth::WorkloadSpec probe;
  ApplyKnobs(args, &probe);  // marks the knob flags as known before Problems()
  for (const auto& p : args.Problems()) problems.push_back(p);
  if (!stack_config.ok()) problems.push_back(stack_config.status().message());
  if (!base.ok()) problems.push_back(base.status().message());
  if (dyn < 1 || branches < 1) problems.push_back("--branches and --dynamic-window must be >= 1");
  std::vector<std::string> workloads;
  if (list == "all") {
    workloads = synth::BundledWorkloadNames();
  } else {
    std::stringstream ss(list);
    std::string w;
    while (std::getline(ss, w, ',')) workloads.push_back(w);
  }
  if (!problems.empty()) return UsageError("sim", problems);

  struct Cell {
    hwmodel::HotPathTableConfig config;
    std::optional<hwmodel::HotPathTable> hpt, win_hpt;
    profiles::DynamicOverlap dynamic;
    double overlap = 0;
  };
  JsonWriter j;
  j.BeginArray();
  for (const auto& name : workloads) {
    auto spec = synth::BundledWorkload(name, seed);
    if (!spec.ok()) return UsageError("sim", {spec.status().message()});
    ApplyKnobs(args, &spec.value());
    auto stream = synth::SyntheticStream::Create(*spec);
    auto stack = hwmodel::PathStack::Create(*stack_config);
    if (!stream.ok() || !stack.ok()) return UsageError("sim", {"cannot build " + name});
    std::vector<Cell> cells;
    for (uint32_t e : sizes) {
      for (uint32_t w : ways) {
        Cell c;
        c.config = *base;
        c.config.entries = e;
        c.config.ways = w;
        if (w > e || !c.config.Validate().ok()) continue;  // e.g. 2 sets of 128x128
        c.hpt.emplace(hwmodel::HotPathTable::Create(c.config).value());
        c.win_hpt.emplace(hwmodel::HotPathTable::Create(c.config).value());
        cells.push_back(std::move(c));
      }
    }
    hwmodel::ExactPathProfile exact, win_exact;
    const hwmodel::Metric metric = base->metric;
    auto end_window = [&] {
      if (win_exact.size() == 0) return;
      auto ew = ExactWeights(win_exact, metric);
      for (auto& c : cells) {
        c.dynamic.AddWindow(profiles::OverlapPercent(ew, HptWeights(*c.win_hpt)));
        c.win_hpt->Clear();
      }
      win_exact.Clear();
    };
    BranchBatch batch, piece;
    uint64_t in_window = 0;
    for (uint64_t done = 0; done < branches;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, branches - done));
      stream->NextBatch(n, &batch);
      done += n;
      SplitAtWindows(
          batch, dyn, &in_window, &piece,
          [&](const BranchBatch& p) {
            stack->ProcessBatch(p, [&](const CompletedPath& c) {
              exact.Record(c);
              win_exact.Record(c);
              for (auto& cell : cells) {
                cell.hpt->Record(c);
                cell.win_hpt->Record(c);
              }
            });
          },
          end_window);
    }
    bool any_window = cells.empty() || cells[0].dynamic.windows() > 0;
    if (!any_window) end_window();  // shorter than one window: score the partial one
    auto ew = ExactWeights(exact, metric);
    for (auto& c : cells) c.overlap = profiles::OverlapPercent(ew, HptWeights(*c.hpt));

    auto value = [&](uint32_t e, uint32_t w, bool dynamic) -> std::optional<double> {
      for (const auto& c : cells)
        if (c.config.entries == e && c.config.ways == w)
          return dynamic ? c.dynamic.AveragePercent() : c.overlap;
      return std::nullopt;
    };
    if (json) {
      for (const auto& c : cells) {
        j.BeginObject();
        j.Key("workload").String(name);
        j.Key("seed").Uint(seed);
        j.Key("branches").Uint(branches);
        j.Key("paths_distinct").Uint(exact.size());
        j.Key("hpt_entries").Uint(c.config.entries);
        j.Key("hpt_ways").Uint(c.config.ways);
        j.Key("overlap_pct").Double(c.overlap);
        j.Key("dynamic_overlap_pct").Double(c.dynamic.AveragePercent());
        j.Key("dynamic_windows").Uint(c.dynamic.windows());
        j.EndObject();
      }
      continue;
    }
    for (bool dynamic : {false, true}) {
      std::printf("\n%s overlap %%, workload %s (seed %" PRIu64 ", %" PRIu64
                  " branches, %zu distinct %s paths%s)\n\n",
                  dynamic ? "Dynamic" : "Complete", name.c_str(), seed, branches, exact.size(),
                  hwmodel::PathStackConfigName(*stack_config).c_str(),
                  dynamic ? (", " + std::to_string(dyn) + "-branch windows").c_str() : "");
      std::printf("| entries |");
      for (uint32_t w : ways) std::printf(" %u-way |", w);
      std::printf("\n|---:|");
      for (size_t i = 0; i < ways.size(); ++i) std::printf("---:|");
      std::printf("\n");
      for (uint32_t e : sizes) {
        std::printf("| %u |", e);
        for (uint32_t w : ways) {
          auto v = value(e, w, dynamic);
          if (v) {
            std::printf(" %.1f |", *v);
          } else {
            std::printf(" - |");
          }
        }
        std::printf("\n");
      }
    }
  }
  j.EndArray();
  if (json) std::printf("%s\n", j.str().c_str());
  return kExitOk;
}

int RunSim(Args& args) {
  const bool json = args.Has("json");
  const bool sweep = args.Has("sweep");
  if (sweep) return RunSweep(args);
  if (args.Has("subpaths") || args.Has("calls")) return RunStreamProfiles(args);
  std::string source_desc;
  auto hpt_config = ParseHpt(args);
  std::string paths_spec = args.Get("paths", "bl");
  auto stack_config = hwmodel::ParsePathStackConfig(paths_spec);
  long long window = args.GetInt("window", 0, 0, kMaxI64),
            period = args.GetInt("period", 0, 0, kMaxI64);
  long long interval = args.GetInt("sample-interval", -1, 0, kMaxI64),
            burst = args.GetInt("burst-length", 0, 0, kMaxI64);
  long long top_k = args.GetInt("top", 10, 0, 1000000);
  long long dyn = args.GetInt("dynamic-window", 10000000, 1, kMaxI64);
  auto source = Source::Open(args, &source_desc);
  if (auto p = args.Problems(); !p.empty()) return UsageError("sim", p);
  for (const Status* s : {&hpt_config.status(), &stack_config.status(), &source.status()}) {
    if (!s->ok()) return UsageError("sim", {s->message()});
  }
  if (top_k < 0 || dyn < 1) return UsageError("sim", {"--top must be >= 0, --dynamic-window >= 1"});
  const bool window_mode = window > 0 || period > 0;
  const bool bursty_mode = interval >= 0 || burst > 0;
  if (window_mode && bursty_mode)
    return UsageError(
        "sim", {"--window/--period and --sample-interval/--burst-length exclude each other"});
  if (window_mode && (window < 1 || period < 1))
    return UsageError("sim", {"window sampling needs --window W >= 1 and --period P >= 1"});

  SimResult r;
  r.source = source_desc;
  r.paths = hwmodel::PathStackConfigName(*stack_config);
  r.hpt = *hpt_config;
  r.dynamic_window = static_cast<uint64_t>(dyn);
  const hwmodel::Metric metric = r.hpt.metric;

  auto exact_stack = hwmodel::PathStack::Create(*stack_config);
  auto hpt = hwmodel::HotPathTable::Create(r.hpt);
  if (!exact_stack.ok() || !hpt.ok()) return UsageError("sim", {"bad path or HPT configuration"});
  hwmodel::ExactPathProfile exact;
  WindowPair win{hwmodel::HotPathTable::Create(r.hpt).value(), {}};
  profiles::DynamicOverlap dynamic;

  std::optional<hwmodel::BurstyController> bursty;
  std::optional<hwmodel::PathStack> sampled_stack;
  std::optional<hwmodel::WindowEstimator> estimator;
  if (bursty_mode) {
    hwmodel::BurstyConfig bc;
    bc.sample_interval = static_cast<uint64_t>(std::max(0LL, interval));
    bc.burst_length = static_cast<uint64_t>(burst > 0 ? burst : 100);
    auto c = hwmodel::BurstyController::Create(bc);
    if (!c.ok()) return UsageError("sim", {c.status().message()});
    bursty.emplace(std::move(c).value());
    sampled_stack.emplace(hwmodel::PathStack::Create(*stack_config).value());
    r.mode = "bursty";
    r.sampling_period = bc.SamplingPeriod();
  } else if (window_mode) {
    hwmodel::WindowEstimatorConfig wc;
    wc.stack = *stack_config;
    wc.sampling_period = static_cast<double>(period);
    auto e = hwmodel::WindowEstimator::Create(wc);
    if (!e.ok()) return UsageError("sim", {e.status().message()});
    estimator.emplace(std::move(e).value());
    r.mode = "window";
    r.sampling_period = static_cast<double>(period);
  }

  auto record_sampled = [&](const CompletedPath& c) {
    hpt->Record(c);
    win.hpt->Record(c);
  };
  auto close_window = [&](bool partial) {
    if (partial && dynamic.windows() > 0) return;  // only whole windows once there is one
    if (win.exact.size() == 0) return;
    dynamic.AddWindow(
        profiles::OverlapPercent(ExactWeights(win.exact, metric), HptWeights(*win.hpt)));
    win.exact.Clear();
    win.hpt->Clear();
  };

  BranchBatch batch, piece;
  std::vector<BranchBatch> bursts;
  uint64_t in_window = 0;
  for (;;) {
    auto more = (*source)->Next(&batch);
    if (!more.ok()) {
      std::fprintf(stderr, "pathctl sim: %s\n", more.status().ToString().c_str());
      return kExitError;
    }
    if (!*more) break;
    r.branches += batch.events.size();
    SplitAtWindows(
        batch, static_cast<uint64_t>(dyn), &in_window, &piece,
        [&](const BranchBatch& p) {
          exact_stack->ProcessBatch(p, [&](const CompletedPath& c) {
            exact.Record(c);
            win.exact.Record(c);
            if (!bursty && !estimator) record_sampled(c);
          });
          if (bursty) {
            bursts.clear();
            bursty->Apply(p, &bursts);
            for (const auto& b : bursts) sampled_stack->ProcessBatch(b, record_sampled);
          } else if (estimator) {
            auto spans = hwmodel::SliceTakenWindows(p.events, static_cast<uint64_t>(window),
                                                    static_cast<uint64_t>(window * period), 0);
            for (const auto& [b, e] : spans)
              estimator->AddWindow(std::span<const BranchEvent>(p.events.data() + b, e - b));
          }
        },
        [&] { close_window(false); });
  }
  if (in_window > 0) close_window(true);

  r.paths_distinct = exact.size();
  r.stack = exact_stack->stats();
  r.paths_completed = r.stack.paths;
  auto exact_w = ExactWeights(exact, metric);
  profiles::WeightedProfile<PathDescriptor> estimate;
  if (estimator) {
    for (const auto& e : estimator->Estimates()) estimate.emplace_back(e.path, e.estimate);
  } else {
    estimate = HptWeights(*hpt);
    // Bursts see one tick in sampling_period: scale counts back to whole-stream estimates.
    if (bursty)
      for (auto& [p, w] : estimate) w *= r.sampling_period;
    r.table = hpt->stats();
    r.dynamic_overlap =
        dynamic.windows() ? std::optional<double>(dynamic.AveragePercent()) : std::nullopt;
    r.dynamic_windows = dynamic.windows();
  }
  r.hpt_valid = estimate.size();
  r.overlap = profiles::OverlapPercent(exact_w, estimate);
  r.hps_overlap = profiles::HpsOverlapPercent(exact_w, estimate);
  r.top = TopRows(estimate, exact, metric, static_cast<size_t>(top_k));
  {
    auto sorted = exact.Sorted(metric);
    double total = static_cast<double>(exact.Total(metric)), acc = 0;
    for (size_t i = 0; i < sorted.size() && i < std::max<size_t>(r.hpt_valid, 100); ++i) {
      acc += static_cast<double>(sorted[i].second.Get(metric));
      if (i + 1 == 100) r.top100 = total > 0 ? 100 * acc / total : 0;
      if (i + 1 == r.hpt_valid) r.ideal_overlap = total > 0 ? 100 * acc / total : 0;
    }
    if (sorted.size() < 100) r.top100 = 100;
    if (sorted.size() < r.hpt_valid) r.ideal_overlap = 100;
  }
  if (json) {
    PrintJson(r);
  } else {
    PrintText(r);
  }
  return r.branches ? kExitOk : kExitNoData;
}

constexpr char kUsage[] =
    R"(usage: pathctl sim [--workload NAME --seed N | --pbs FILE] [--branches N] [OPTIONS]

Runs the path engine on a synthetic workload (loops, branchy, calls, large) or a .pbs stream and
compares what it finds with the exact profile of the same stream.

  --workload NAME        bundled synthetic workload (default branchy)
  --seed N               workload seed (default 1)
  --functions N --diamonds N --call-levels N --skew X --correlation X --zipf X
                         override the workload's knobs (see examples/synth/.../workload.h)
  --pbs FILE             read branches from a .pbs file instead
  --branches N           branches to run (default 20000000; a .pbs file: all)
  --paths KIND           bl | wpp | extended:loops:N | extended:calls:N (default bl)
  --hpt ENTRIESxWAYS     Hot Path Table geometry (default 512x4)
  --index xor|start      HPT index function (default xor)
  --replacement lfu|lru  HPT replacement (default lfu)
  --metric M             count | instructions | cycles | mispredictions (default count)
  --window W --period P  window sampling: windows of W taken branches, one every P*W, scored
                         by the window estimator (instead of the HPT)
  --sample-interval N --burst-length N
                         bursty sampling (paper 001) of calls and back-edges before the HPT
  --top K                hot paths to list (default 10)
  --dynamic-window N     branches per window for the dynamic overlap (default 10000000)
  --json                 machine-readable output
  --sweep                complete and dynamic overlap for HPT sizes x ways (Figure 5.7 style)
                         over --workload (default all)
  --sizes N,N,...        with --sweep: HPT entries (default 128,256,512,1024,2048)
  --ways N,N,...         with --sweep: HPT associativities (default 2,4,8,16,32)

Stream profiles (instead of the path engine; both flags may be given):
  --subpaths             OSP hot subpaths (paper 000): the top K with blocks, estimate, error
                         bound, exact count (a second pass), f and memory
  --osp-entries M        reservoir bound m in entries (default 4096; formerly --osp-memory)
  --osp-max-length L     longest subpath, a power of two 2..1024 (default 32)
  --osp-gain G --osp-min-f F --osp-seed N
                         eq. 2.13's expected gain (default 100), floor on f (default 2), seed
  --confidence C         confidence of the error bounds (default 0.95)
  --calls                hot call pairs and hot methods (paper 001) from the whole stream, or from
                         its samples with --sample-interval/--burst-length or --window/--period,
                         with the overlap and HPS overlap against the exact counts)";

PATHCTL_COMMAND(Command{"sim",
                        "run the path engine on a synthetic workload or .pbs stream",
                        kUsage,
                        {"json", "sweep", "subpaths", "calls"},
                        RunSim});

}  // namespace
}  // namespace pathctl
