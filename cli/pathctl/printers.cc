#include "pathctl/printers.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include <google/protobuf/util/json_util.h>

#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathctl {
namespace v1 = pathprof::v1;
using pathprof::api::SessionIdForDisplay;

namespace {
// "session ID: " before a table's summary; nothing for an answer that names no session (a
// recording's, pathctl run's).
std::string SessionPrefix(const std::string& name) {
  return name.empty() ? "" : "session " + SessionIdForDisplay(name) + ": ";
}

// Under a table whose rows come from several processes: the basis its shares have (one total,
// every process's together: pipeline::Session rebases each process's shares on it).
template <typename Rows>
void PrintShareBasis(const Rows& rows, const char* of_what) {
  std::set<int32_t> pids;
  for (const auto& r : rows) pids.insert(r.pid());
  if (pids.size() > 1)
    std::printf("(shares of %s of all %zu processes together)\n", of_what, pids.size());
}
}  // namespace

std::string LocationText(const v1::Location& l) {
  char buf[64];
  std::string out;
  if (!l.function().empty()) {
    snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(l.offset()));
    out = l.function() + buf;
  } else {
    snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(l.address()));
    out = buf;
  }
  if (!l.file().empty()) {
    auto slash = l.file().rfind('/');
    out += " (" + (slash == std::string::npos ? l.file() : l.file().substr(slash + 1)) + ":" +
           std::to_string(l.line()) + ")";
  } else if (l.function().empty() && !l.image().empty()) {
    auto slash = l.image().rfind('/');
    out += " (" + (slash == std::string::npos ? l.image() : l.image().substr(slash + 1)) + ")";
  }
  return out;
}

std::string FunctionText(const v1::Location& l) {
  return l.function().empty() ? LocationText(l) : l.function();
}

std::string EstimateText(const v1::Estimate& e) {
  char buf[96];
  if (e.error_bound() > 0)
    snprintf(buf, sizeof buf, "%.0f ±%.0f", e.value(), e.error_bound());
  else
    snprintf(buf, sizeof buf, "%.0f", e.value());
  return buf;
}

// The words below come from the word tables (api/v1_enums.h), whose words are string literals:
// their data() is NUL-terminated.
const char* SessionStateName(v1::SessionState s) {
  return pathprof::api::SessionStateWord(s).data();
}

const char* BranchSourceName(v1::BranchSource s) {
  return pathprof::api::BranchSourceWord(s).data();
}

namespace {
// The estimator as pipeline::PathEstimatorName names it.
const char* EstimatorName(v1::PathEstimator e) {
  const std::optional<pathprof::pipeline::PathEstimator> estimator =
      pathprof::FirstOf(pathprof::api::kV1PathEstimators, e);
  if (!estimator || *estimator == pathprof::pipeline::PathEstimator::kNone) return "no paths yet";
  return pathprof::pipeline::PathEstimatorName(*estimator).data();
}
}  // namespace

void PrintHotPaths(const v1::HotPaths& hp, const std::string& how) {
  std::printf("%s%llu distinct paths, total %.0f (%s)\n", SessionPrefix(hp.session()).c_str(),
              static_cast<unsigned long long>(hp.paths_distinct()), hp.total(),
              how.empty() ? EstimatorName(hp.estimator()) : how.c_str());
  std::printf("%4s %7s %-15s %7s %16s %4s  %-34s %s\n", "#", "pid", "comm", "share", "estimate",
              "len", "start", "outcomes");
  int i = 0;
  for (const auto& p : hp.paths())
    std::printf("%4d %7u %-15s %6.2f%% %16s %4u  %-34s %s\n", ++i, p.pid(), p.comm().c_str(),
                100 * p.estimate().share(), EstimateText(p.estimate()).c_str(), p.length(),
                LocationText(p.start()).c_str(),
                pathprof::hwmodel::FormatOutcomes(p.outcomes(), p.length(),
                                                  pathprof::hwmodel::kTakenNotTaken)
                    .c_str());
  PrintShareBasis(hp.paths(), "the metric");
}

void PrintJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  // Serializing a message built in this process cannot fail (no Any to resolve).
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  std::printf("%s\n", out.c_str());
}

void PrintPathBlocks(const v1::HotPaths& hp) {
  for (int i = 0; i < hp.paths_size(); ++i) {
    std::printf("path %d:\n", i + 1);
    for (const auto& b : hp.paths(i).blocks()) std::printf("    %s\n", LocationText(b).c_str());
  }
}

void PrintHotSubpaths(const v1::HotSubpaths& sp) {
  std::printf("%sOSP sampling frequency %.1f\n", SessionPrefix(sp.session()).c_str(),
              sp.sampling_frequency());
  std::printf("%4s %7s %-15s %7s %16s %5s  %s\n", "#", "pid", "comm", "share", "estimate", "len",
              "first block");
  int i = 0;
  for (const auto& s : sp.subpaths())
    std::printf("%4d %7u %-15s %6.2f%% %16s %5u  %s\n", ++i, s.pid(), s.comm().c_str(),
                100 * s.estimate().share(), EstimateText(s.estimate()).c_str(), s.length(),
                s.blocks_size() ? LocationText(s.blocks(0)).c_str() : "-");
  PrintShareBasis(sp.subpaths(), "the subpaths reported");
}

void PrintHotCallPairs(const v1::HotCallPairs& pairs) {
  std::printf("%4s %7s %-15s %7s %14s  %-36s %s\n", "#", "pid", "comm", "share", "estimate",
              "call site", "target");
  int i = 0;
  for (const auto& p : pairs.pairs())
    std::printf("%4d %7u %-15s %6.2f%% %14s  %-36s %s\n", ++i, p.pid(), p.comm().c_str(),
                100 * p.estimate().share(), EstimateText(p.estimate()).c_str(),
                LocationText(p.call_site()).c_str(), LocationText(p.target()).c_str());
  PrintShareBasis(pairs.pairs(), "every call");
}

void PrintHotMethods(const v1::HotMethods& methods) {
  std::printf("%4s %7s %-15s %7s %12s %14s  %s\n", "#", "pid", "comm", "self%", "self", "entries",
              "function");
  int i = 0;
  for (const auto& m : methods.methods())
    std::printf("%4d %7u %-15s %6.2f%% %12s %14s  %s\n", ++i, m.pid(), m.comm().c_str(),
                100 * m.self().share(), EstimateText(m.self()).c_str(),
                EstimateText(m.entries()).c_str(), FunctionText(m.function()).c_str());
  PrintShareBasis(methods.methods(), "every stack sample (self) and entry");
  if (!methods.hot_data_streams_unsupported().empty())
    std::printf("(hot data streams: %s)\n", methods.hot_data_streams_unsupported().c_str());
}

void PrintTree(const v1::CallingContextTree& tree) {
  std::printf("%s%llu samples, total weight %.0f\n", SessionPrefix(tree.session()).c_str(),
              static_cast<unsigned long long>(tree.samples()), tree.total_weight());
  std::map<uint64_t, int> depth;  // parents come before children
  for (const auto& n : tree.nodes()) {
    const int d = n.parent_id() ? depth[n.parent_id()] + 1 : 0;
    depth[n.id()] = d;
    const double pct = tree.total_weight() > 0 ? 100 * n.total_weight() / tree.total_weight() : 0;
    // A context branch windows were attributed to: its id selects its hot paths
    // (pathctl paths SESSION --context ID).
    const std::string windows = n.windows() ? "  {context " + std::to_string(n.context_id()) +
                                                  ": " + std::to_string(n.windows()) + " windows}"
                                            : "";
    std::printf("%6.2f%% %8.0f self %-8.0f %*s%s%s%s\n", pct, n.total_weight(), n.self_weight(),
                2 * d, "", FunctionText(n.function()).c_str(), n.truncated() ? " [truncated]" : "",
                windows.c_str());
  }
}

void PrintReportTables(const v1::HotPaths& paths, const v1::HotSubpaths& subpaths,
                       const v1::HotCallPairs& pairs, const v1::HotMethods& methods,
                       const char* methods_title) {
  std::printf("\nhot paths:\n");
  PrintHotPaths(paths);
  if (paths.paths_size() == 0) std::printf("  (none: no branch windows were collected)\n");
  PrintPathBlocks(paths);
  std::printf("\nhot subpaths:\n");
  PrintHotSubpaths(subpaths);
  std::printf("\nhot call pairs:\n");
  PrintHotCallPairs(pairs);
  std::printf("\n%s:\n", methods_title);
  PrintHotMethods(methods);
}

namespace {
// "reason=count" for each count above zero, space-separated after what `out` holds.
void AppendCounts(const google::protobuf::RepeatedPtrField<v1::DropCount>& counts,
                  std::string* out) {
  for (const v1::DropCount& d : counts)
    if (d.count() > 0)
      *out += (out->empty() ? "" : " ") + d.reason() + "=" + std::to_string(d.count());
}
}  // namespace

void PrintTargetStats(const google::protobuf::RepeatedPtrField<v1::TargetStats>& stats) {
  std::printf("%-10s %7s %10s %9s %12s %8s %9s  %s\n", "SESSION", "PID", "STACKS", "WINDOWS",
              "BRANCHES", "CPU s", "MEM MiB", "DROPS / DECODE ERRORS");
  for (const auto& t : stats) {
    std::string lost;
    AppendCounts(t.drops(), &lost);
    AppendCounts(t.decode_errors(), &lost);
    const std::string session = t.session().empty() ? "-" : SessionIdForDisplay(t.session());
    std::printf("%-10s %7u %10llu %9llu %12llu %8.2f %9.1f  %s\n", session.c_str(), t.pid(),
                static_cast<unsigned long long>(t.stack_samples()),
                static_cast<unsigned long long>(t.windows()),
                static_cast<unsigned long long>(t.branches()), t.pipeline_cpu_seconds(),
                t.memory_bytes() / 1048576.0, lost.empty() ? "-" : lost.c_str());
  }
  for (const auto& t : stats) {
    const std::string session = t.session().empty() ? "-" : SessionIdForDisplay(t.session());
    if (t.namespace_pid() != 0)
      std::printf("%s pid %u: pid %u in its own pid namespace (a container)\n", session.c_str(),
                  t.pid(), t.namespace_pid());
    if (!t.window_weighting().empty())
      std::printf("%s pid %u: windows weighted by %s\n", session.c_str(), t.pid(),
                  t.window_weighting().c_str());
    // Retention, not loss: the raw windows the branch-profile export keeps are a bounded
    // buffer, and every window let go from it reached the profile first.
    if (t.export_windows_kept() > 0 || t.export_windows_let_go() > 0)
      std::printf(
          "%s pid %u: export buffer (pathctl export --format bolt|perf-lbr): kept %lld "
          "newest windows, %lld older let go\n",
          session.c_str(), t.pid(), static_cast<long long>(t.export_windows_kept()),
          static_cast<long long>(t.export_windows_let_go()));
    // The rate's bound, not a loss: bursts whose time came when the target's stopped-time
    // budget was spent. A run with few windows says here why.
    std::string held;
    AppendCounts(t.windows_held_back(), &held);
    if (!held.empty())
      std::printf("%s pid %u: windows held back (the rate's bounds, not losses): %s\n",
                  session.c_str(), t.pid(), held.c_str());
    std::string from;
    AppendCounts(t.windows_by_source(), &from);
    if (!from.empty())
      std::printf("%s pid %u: windows by source: %s\n", session.c_str(), t.pid(), from.c_str());
  }
}

namespace {
void PrintCounts(const char* title,
                 const google::protobuf::RepeatedPtrField<v1::DropCount>& counts) {
  if (counts.empty()) return;
  std::printf("  %s:\n", title);
  for (const auto& c : counts)
    std::printf("    %-36s %lld\n", c.reason().c_str(), static_cast<long long>(c.count()));
}
}  // namespace

void PrintDecodeSummary(const v1::DecodeSummary& d) {
  std::printf(
      "decoding (%s): records %lld, samples %lld, windows %lld, events %lld (%lld taken, %lld "
      "not taken), instructions %lld\n",
      d.format().c_str(), static_cast<long long>(d.records()), static_cast<long long>(d.samples()),
      static_cast<long long>(d.windows()), static_cast<long long>(d.events()),
      static_cast<long long>(d.taken()), static_cast<long long>(d.not_taken()),
      static_cast<long long>(d.instructions()));
  PrintCounts("broken windows (LBR ranges, by reason)", d.broken_windows());
  PrintCounts("dropped LBR entries (by reason)", d.dropped_entries());
  PrintCounts("decode errors", d.decode_errors());
  PrintCounts("counters", d.counters());
}

}  // namespace pathctl
