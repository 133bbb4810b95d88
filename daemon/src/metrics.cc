#include "pathprof/daemon/metrics.h"

#include "pathprof/daemon/continuous.h"

#include <httplib.h>

#include <cstdio>
#include <sstream>

#include "process_stats.h"

namespace pathprof::daemon {
namespace {

// Label values: backslash, quote and newline escaped as the exposition format requires.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

class Writer {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    out_ << name;
    if (!labels.empty()) out_ << "{" << labels << "}";
    out_ << " " << buf << "\n";
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string Label(const char* k, const std::string& v) {
  return std::string(k) + "=\"" + Escape(v) + "\"";
}

std::string Join(const std::string& labels, const std::string& more) {
  return labels.empty() ? more : labels + "," + more;
}

}  // namespace

std::string RenderMetrics(const ProfilerService& service, const DaemonHealth& h) {
  Writer w;
  w.Family("pathprofd_up", "gauge", "1 while the daemon serves");
  w.Sample("pathprofd_up", "", 1);
  w.Family("pathprofd_start_time_seconds", "gauge", "Unix time the daemon started");
  w.Sample("pathprofd_start_time_seconds", "", h.start_unix_s);
  w.Family("pathprofd_cpu_seconds_total", "counter", "CPU time of the daemon (user+system)");
  w.Sample("pathprofd_cpu_seconds_total", "", DaemonCpuSeconds());
  w.Family("pathprofd_resident_memory_bytes", "gauge", "resident set size of the daemon");
  w.Sample("pathprofd_resident_memory_bytes", "", static_cast<double>(DaemonRssBytes()));
  w.Family("pathprofd_open_fds", "gauge", "open file descriptors of the daemon");
  w.Sample("pathprofd_open_fds", "", static_cast<double>(DaemonOpenFds()));
  w.Family("pathprofd_config_reloads_total", "counter", "SIGHUP reloads by result");
  w.Sample("pathprofd_config_reloads_total", Label("result", "ok"), static_cast<double>(h.reloads));
  w.Sample("pathprofd_config_reloads_total", Label("result", "failed"),
           static_cast<double>(h.reload_failures));
  w.Family("pathprofd_connections_accepted_total", "counter", "Unix-socket connections accepted");
  w.Sample("pathprofd_connections_accepted_total", "", static_cast<double>(h.connections_accepted));
  w.Family("pathprofd_connections", "gauge", "client connections open");
  w.Sample("pathprofd_connections", "", static_cast<double>(h.connections_open));
  w.Family("pathprofd_connections_refused_total", "counter",
           "Unix-socket connections closed unserved, by the bound they were over");
  w.Sample("pathprofd_connections_refused_total", Label("reason", "per_client"),
           static_cast<double>(h.connections_refused_per_client));
  w.Sample("pathprofd_connections_refused_total", Label("reason", "total"),
           static_cast<double>(h.connections_refused_total));
  w.Family("pathprofd_connections_closed_idle_total", "counter",
           "connections shut down with no call in a handler for limits.idle_connection_timeout_s");
  w.Sample("pathprofd_connections_closed_idle_total", "",
           static_cast<double>(h.connections_closed_idle));
  w.Family("pathprofd_connections_closed_http2_guard_total", "counter",
           "connections closed before the client acknowledged the daemon's SETTINGS, by reason");
  for (int r = 0; r < Http2Guard::kReasons; ++r)
    w.Sample("pathprofd_connections_closed_http2_guard_total",
             Label("reason", Http2Guard::ReasonName(static_cast<Http2Guard::Reason>(r))),
             static_cast<double>(h.connections_closed_http2_guard[r]));
  w.Family("pathprofd_image_cache_bytes", "gauge", "ELF images held to symbolize");
  w.Sample("pathprofd_image_cache_bytes", "", static_cast<double>(h.images.bytes));
  w.Family("pathprofd_image_cache_images", "gauge", "ELF images held to symbolize");
  w.Sample("pathprofd_image_cache_images", "", static_cast<double>(h.images.images));
  w.Family("pathprofd_image_cache_evictions_total", "counter", "images evicted at the bound");
  w.Sample("pathprofd_image_cache_evictions_total", "", static_cast<double>(h.images.evictions));
  w.Family("pathprofd_symbolizer_helper_starts_total", "counter",
           "pathprof-symbolizer processes started (the sessions' symbolization and unwinding)");
  w.Sample("pathprofd_symbolizer_helper_starts_total", "",
           static_cast<double>(h.symbolizer.starts));
  w.Family("pathprofd_symbolizer_helper_requests_total", "counter",
           "symbols and unwinds asked of pathprof-symbolizer");
  w.Sample("pathprofd_symbolizer_helper_requests_total", "",
           static_cast<double>(h.symbolizer.requests));
  w.Family(
      "pathprofd_symbolizer_helper_failures_total", "counter",
      "requests pathprof-symbolizer failed (no symbol; an unwind by frame pointers), by reason");
  for (const auto& [reason, n] : h.symbolizer.failures)
    w.Sample("pathprofd_symbolizer_helper_failures_total", Label("reason", reason),
             static_cast<double>(n));
  w.Family("pathprofd_watch_streams", "gauge", "WatchHotPaths streams open");
  w.Sample("pathprofd_watch_streams", "", service.streams());
  w.Family("pathprofd_rate_limited_total", "counter", "calls refused by per-client rate limits");
  w.Sample("pathprofd_rate_limited_total", "", static_cast<double>(service.rate_limited()));

  if (const ContinuousProfiler* c = service.continuous()) {
    v1::ContinuousStats cs;
    c->FillStats(&cs, /*details=*/false);  // anyone may read /metrics
    w.Family("pathprofd_continuous_windows_total", "counter",
             "continuous-mode windows by outcome (failed_* are dropped windows)");
    w.Sample("pathprofd_continuous_windows_total", Label("outcome", "exported"),
             static_cast<double>(cs.windows_exported()));
    w.Sample("pathprofd_continuous_windows_total", Label("outcome", "failed_start"),
             static_cast<double>(cs.windows_failed_start()));
    w.Sample("pathprofd_continuous_windows_total", Label("outcome", "failed_export"),
             static_cast<double>(cs.windows_failed_export()));
    w.Family("pathprofd_continuous_archive_windows", "gauge", "windows kept on disk");
    w.Sample("pathprofd_continuous_archive_windows", "", static_cast<double>(cs.archive_windows()));
    w.Family("pathprofd_continuous_archive_bytes", "gauge", "bytes of the windows kept on disk");
    w.Sample("pathprofd_continuous_archive_bytes", "", static_cast<double>(cs.archive_bytes()));
    w.Family("pathprofd_continuous_archive_dropped_total", "counter",
             "windows deleted or never stored by the archive, by reason");
    w.Sample("pathprofd_continuous_archive_dropped_total", Label("reason", "evicted"),
             static_cast<double>(cs.archive_evicted()));
    w.Sample("pathprofd_continuous_archive_dropped_total", Label("reason", "rejected"),
             static_cast<double>(cs.archive_rejected()));
    w.Sample("pathprofd_continuous_archive_dropped_total", Label("reason", "write_error"),
             static_cast<double>(cs.archive_write_errors()));
    w.Family("pathprofd_continuous_archive_branches_not_stored_total", "counter",
             "windows archived without their branch windows (.pbs)");
    w.Sample("pathprofd_continuous_archive_branches_not_stored_total", "",
             static_cast<double>(cs.archive_branches_not_stored()));
    w.Family("pathprofd_continuous_push_windows_total", "counter",
             "windows per fleet backend by outcome");
    for (const auto& p : cs.push()) {
      w.Sample("pathprofd_continuous_push_windows_total",
               Label("sink", p.sink()) + "," + Label("outcome", "sent"),
               static_cast<double>(p.sent()));
      w.Sample("pathprofd_continuous_push_windows_total",
               Label("sink", p.sink()) + "," + Label("outcome", "dropped"),
               static_cast<double>(p.dropped()));
    }
  }

  auto rpcs = service.rpc_metrics();
  w.Family("pathprofd_rpcs_total", "counter", "gRPC calls by method and status code");
  for (const auto& [method, m] : rpcs)
    for (const auto& [code, n] : m.by_code)
      w.Sample("pathprofd_rpcs_total",
               Label("method", method) + "," + Label("code", std::to_string(code)),
               static_cast<double>(n));
  w.Family("pathprofd_rpc_duration_seconds", "histogram", "time spent answering a call");
  for (const auto& [method, m] : rpcs) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < RpcMetrics::kNumBuckets; ++i) {
      cumulative += m.bucket_counts[i];
      char le[32];
      snprintf(le, sizeof le, "%g", RpcMetrics::kBuckets[i]);
      w.Sample("pathprofd_rpc_duration_seconds_bucket",
               Label("method", method) + "," + Label("le", le), static_cast<double>(cumulative));
    }
    w.Sample("pathprofd_rpc_duration_seconds_bucket",
             Label("method", method) + "," + Label("le", "+Inf"), static_cast<double>(m.count));
    w.Sample("pathprofd_rpc_duration_seconds_sum", Label("method", method), m.sum_seconds);
    w.Sample("pathprofd_rpc_duration_seconds_count", Label("method", method),
             static_cast<double>(m.count));
  }

  auto infos = service.sessions()->List();
  w.Family("pathprofd_sessions", "gauge", "sessions by state");
  std::map<std::string, int> by_state;
  for (const auto& i : infos) ++by_state[std::string(pipeline::SessionStateName(i.state))];
  for (const auto& [state, word] : pipeline::kSessionStateWords) by_state[std::string(word)] += 0;
  for (const auto& [st, n] : by_state) w.Sample("pathprofd_sessions", Label("state", st), n);

  struct Row {
    std::string labels;
    pipeline::TargetStats stats;
  };
  std::vector<Row> rows;
  for (const auto& i : infos)
    if (auto s = service.sessions()->Get(i.id))
      for (auto& t : s->Stats())
        rows.push_back(
            {Label("session", i.id) + "," + Label("pid", std::to_string(t.pid)), std::move(t)});
  // Without metrics.per_session the targets are summed into one unlabelled series: /metrics
  // answers anyone who can reach its port, and session ids and pids are not theirs to see.
  if (!h.per_session) {
    Row all;
    for (const Row& r : rows) {
      all.stats.stack_samples += r.stats.stack_samples;
      all.stats.windows += r.stats.windows;
      all.stats.branches += r.stats.branches;
      all.stats.pipeline_cpu_seconds += r.stats.pipeline_cpu_seconds;
      all.stats.memory_bytes += r.stats.memory_bytes;
      for (const auto& [reason, n] : r.stats.drops) all.stats.drops[reason] += n;
      for (const auto& [reason, n] : r.stats.decode_errors) all.stats.decode_errors[reason] += n;
    }
    rows.assign(1, std::move(all));
  }
  auto counter = [&](const char* name, const char* help, auto field) {
    w.Family(name, "counter", help);
    for (const auto& r : rows) w.Sample(name, r.labels, static_cast<double>(field(r.stats)));
  };
  counter("pathprofd_target_stack_samples_total", "stack samples added to the target's PCCT",
          [](const pipeline::TargetStats& t) { return t.stack_samples; });
  counter("pathprofd_target_windows_total", "branch windows fed to the path engine",
          [](const pipeline::TargetStats& t) { return t.windows; });
  counter("pathprofd_target_branches_total", "branches fed to the path engine",
          [](const pipeline::TargetStats& t) { return t.branches; });
  counter("pathprofd_target_cpu_seconds_total", "CPU the pipeline spent on the target",
          [](const pipeline::TargetStats& t) { return t.pipeline_cpu_seconds; });
  w.Family("pathprofd_target_memory_bytes", "gauge", "approximate memory of the target's profiles");
  for (const auto& r : rows)
    w.Sample("pathprofd_target_memory_bytes", r.labels, static_cast<double>(r.stats.memory_bytes));
  w.Family("pathprofd_target_drops_total", "counter", "data lost before a profile, by reason");
  for (const auto& r : rows)
    for (const auto& [reason, n] : r.stats.drops)
      w.Sample("pathprofd_target_drops_total", Join(r.labels, Label("reason", reason)),
               static_cast<double>(n));
  w.Family("pathprofd_target_decode_errors_total", "counter", "decode errors by reason");
  for (const auto& r : rows)
    for (const auto& [reason, n] : r.stats.decode_errors)
      w.Sample("pathprofd_target_decode_errors_total", Join(r.labels, Label("reason", reason)),
               static_cast<double>(n));
  return w.str();
}

MetricsServer::MetricsServer() = default;
MetricsServer::~MetricsServer() {
  Stop();
}

Status MetricsServer::Start(const std::string& address, std::function<std::string()> render) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return Error(ErrorCode::kInvalidArgument, "metrics address '" + address + "' is not host:port");
  std::string host = address.substr(0, colon);
  int port = std::atoi(address.c_str() + colon + 1);
  server_ = std::make_unique<httplib::Server>();
  server_->Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pathprofd: metrics at /metrics\n", "text/plain");
  });
  if (port == 0)
    port_ = server_->bind_to_any_port(host);
  else
    port_ = server_->bind_to_port(host, port) ? port : -1;
  if (port_ <= 0) return Error(ErrorCode::kIo, "cannot listen for metrics on " + address);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace pathprof::daemon
