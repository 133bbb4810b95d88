// pathprofd: wiring only. Config, listeners, the gRPC server with health and reflection,
// metrics, systemd notify/watchdog, and the signal loop (SIGHUP reloads, SIGTERM stops).
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "pathprof/daemon/config.h"
#include "pathprof/daemon/connection_activity.h"
#include "pathprof/daemon/continuous.h"
#include "pathprof/daemon/log.h"
#include "pathprof/daemon/metrics.h"
#include "pathprof/daemon/peer.h"
#include "pathprof/daemon/service.h"
#include "pathprof/daemon/unix_listener.h"

namespace pathprof::daemon {
namespace {

constexpr const char* kServiceName = "pathprof.v1.PathProfiler";

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::kNotFound, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::shared_ptr<grpc::ServerCredentials>> TlsCredentials(const DaemonConfig& c) {
  auto cert = ReadFile(c.tls_cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(c.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions opts;
  opts.pem_key_cert_pairs.push_back({*key, *cert});
  if (!c.tls_client_ca_file.empty()) {
    auto ca = ReadFile(c.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    opts.pem_root_certs = *ca;
    opts.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else {
    Log(kLogWarning,
        "tcp %s without tcp.tls_client_ca: no client can identify itself, so every "
        "TCP call will be refused",
        c.tcp_address.c_str());
  }
  return grpc::SslServerCredentials(opts);
}

// Pings the systemd watchdog at half its interval while the daemon is healthy.
class Watchdog {
 public:
  void Start() {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    thread_ = std::thread([this, usec] {
      while (!stop_) {
        sd_notify(0, "WATCHDOG=1");
        for (uint64_t slept = 0; slept < usec / 2 && !stop_; slept += 50000) usleep(50000);
      }
    });
  }
  ~Watchdog() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

bool NeedsRestart(const DaemonConfig& a, const DaemonConfig& b) {
  return a.socket_path != b.socket_path || a.socket_group != b.socket_group ||
         a.tcp_address != b.tcp_address || a.tls_cert_file != b.tls_cert_file ||
         a.tls_key_file != b.tls_key_file || a.tls_client_ca_file != b.tls_client_ca_file ||
         a.metrics_address != b.metrics_address;
}

// Signals go to the loop in ServeUntilTerminated (sigwait): blocked before any thread starts,
// so that every thread inherits the mask.
sigset_t BlockDaemonSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Continuous mode's profiler, started; nullptr where the config leaves it off.
Result<std::unique_ptr<ContinuousProfiler>> StartContinuous(
    const DaemonConfig& config, pipeline::SessionManager& sessions, ProfilerService& service,
    const decoders::ImageStoreOptions& images) {
  if (!config.continuous.enabled) return std::unique_ptr<ContinuousProfiler>();
  ContinuousConfig cc = config.continuous;
  cc.step_mode = config.step_mode;
  auto created = ContinuousProfiler::Create(cc, sessions.capabilities(), images,
                                            pipeline::SymbolizeIn::kHelper);
  if (!created.ok()) return WithContext(created.status(), "continuous mode");
  std::unique_ptr<ContinuousProfiler> continuous = std::move(created.value());
  service.SetContinuous(continuous.get());
  continuous->Start();
  Log(kLogNotice, "continuous mode: %u s windows at %u Hz into %s", config.continuous.window_s,
      config.continuous.stack_hz, config.continuous.archive_dir.c_str());
  return continuous;
}

// The gRPC server with health and reflection, and the TLS port where the config has one. Every
// connection is bounded: streams at once, bytes received per stream and per header block, and
// the memory of all of them together.
Result<std::unique_ptr<grpc::Server>> StartGrpcServer(const DaemonConfig& config,
                                                      ProfilerService& service,
                                                      PeerRegistry* peers) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(1 << 20);  // requests are small; anything bigger is hostile
  builder.SetMaxSendMessageSize(256 << 20);   // exports of big profiles
  grpc::ResourceQuota quota("pathprofd");
  quota.SetMaxThreads(128);  // bounds the sync server's thread pool under a connection flood
  // gRPC's memory for every connection together (streams, their buffers and calls): past it,
  // gRPC cancels streams until it is back under.
  quota.Resize(static_cast<size_t>(config.limits.grpc_memory_bytes));
  builder.SetResourceQuota(quota);
  // Announced in the server's SETTINGS: a client opening more streams at once on one connection
  // breaks the protocol, and gRPC closes that connection.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(config.limits.max_streams_per_connection));
  // What one stream may send before the daemon reads it (the flow-control window, not grown by
  // BDP probes), and one header block.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 << 10);
  // A connection with no call for this long is closed (GOAWAY, then the fd): idle connections
  // held open by a client would otherwise keep the daemon's file descriptors forever. A stream
  // that never sends its request is a call to gRPC, so the Unix listener also shuts down
  // connections with no call in a handler (ConnectionActivity counts those).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config.limits.idle_connection_timeout_s * 1000));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(ConnectionActivity(peers));
  builder.experimental().SetInterceptorCreators(std::move(creators));
  int tcp_port = 0;
  if (!config.tcp_address.empty()) {
    auto creds = TlsCredentials(config);
    if (!creds.ok()) return WithContext(creds.status(), "tls");
    builder.AddListeningPort(config.tcp_address, *creds, &tcp_port);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (!config.tcp_address.empty() && tcp_port == 0))
    return Error(ErrorCode::kUnavailable,
                 "cannot start the gRPC server" +
                     (config.tcp_address.empty() ? "" : " on " + config.tcp_address));
  server->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  return server;
}

// What /metrics reports about the daemon itself, besides the service's own counters.
struct DaemonCounters {
  double start_unix_s = 0;
  std::atomic<uint64_t> reloads{0}, reload_failures{0};
};

Status StartMetrics(const DaemonConfig& config, const ProfilerService& service,
                    const UnixListener& listener, PeerRegistry& peers,
                    const DaemonCounters& counters, MetricsServer* metrics) {
  if (config.metrics_address.empty()) return Status::Ok();
  auto render = [&] {
    DaemonHealth h;
    h.start_unix_s = counters.start_unix_s;
    h.reloads = counters.reloads;
    h.reload_failures = counters.reload_failures;
    h.connections_accepted = listener.accepted();
    h.connections_refused_per_client = listener.refused_per_client();
    h.connections_refused_total = listener.refused_total();
    h.connections_closed_idle = listener.idle_shut_down();
    for (int r = 0; r < Http2Guard::kReasons; ++r)
      h.connections_closed_http2_guard[r] =
          listener.guard_closed(static_cast<Http2Guard::Reason>(r));
    h.per_session = config.metrics_per_session;
    h.images = service.sessions()->symbols().ImageCacheCounts();
    h.symbolizer = service.sessions()->symbols().HelperCounts();
    peers.Prune();
    h.connections_open = peers.size();
    return RenderMetrics(service, h);
  };
  PATHPROF_RETURN_IF_ERROR(metrics->Start(config.metrics_address, render));
  Log(kLogInfo, "metrics at http://%s/metrics (port %d)", config.metrics_address.c_str(),
      metrics->port());
  return Status::Ok();
}

// SIGHUP re-reads the config (what needs a restart is said, and kept); returns on SIGTERM or
// SIGINT.
void ServeUntilTerminated(const sigset_t& signals, const Flags& flags, DaemonConfig* config,
                          ProfilerService& service, DaemonCounters* counters) {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig != SIGHUP) return;
    sd_notify(0, "RELOADING=1");
    auto next = BuildConfig(flags);
    if (!next.ok()) {
      ++counters->reload_failures;
      Log(kLogError, "reload failed, keeping the old config: %s", next.status().message().c_str());
    } else {
      if (NeedsRestart(*config, *next))
        Log(kLogWarning,
            "reload: socket, tcp, tls and metrics settings take effect only after a restart");
      service.Configure(*next);
      SetLogLevel(next->log_level);
      *config = std::move(next.value());
      ++counters->reloads;
      Log(kLogNotice, "config reloaded (limits: max_top_k %u, rate %.0f/s per client)",
          config->limits.max_top_k, config->limits.rate_qps);
    }
    sd_notify(0, "READY=1");
  }
}

// Flags and config; an exit code where the daemon should not serve (help, version, bad input).
std::optional<int> ReadConfig(int argc, char** argv, Flags* flags, DaemonConfig* config) {
  auto parsed = ParseFlags(argc, argv);
  if (!parsed.ok()) {
    Log(kLogError, "%s", parsed.status().message().c_str());
    return 2;
  }
  *flags = std::move(parsed.value());
  if (flags->help) {
    std::fputs(FlagsHelp(), stdout);
    std::fputs("  -h, --help             print this help and exit\n", stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("pathprofd %s\n", PATHPROF_VERSION_STRING);
    return 0;
  }
  auto built = BuildConfig(*flags);
  if (!built.ok()) {
    Log(kLogError, "%s", built.status().message().c_str());
    return 2;
  }
  *config = std::move(built.value());
  return std::nullopt;
}

int Main(int argc, char** argv) {
  const sigset_t signals = BlockDaemonSignals();
  Flags flags;
  DaemonConfig config;
  if (std::optional<int> done = ReadConfig(argc, argv, &flags, &config)) return *done;
  SetLogLevel(config.log_level);
  DaemonCounters counters;
  counters.start_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  pipeline::SessionManagerOptions mopts;
  // The service's quotas count held sessions against limits.max_sessions; the manager's own cap
  // is a safety net above it (continuous mode's sessions are not the clients').
  mopts.max_sessions = config.limits.max_sessions * 2;
  // One image cache for every session: bounded in bytes, so what a user maps cannot grow the
  // daemon (limits.max_image_bytes per file, limits.image_cache_bytes in all).
  mopts.images.max_image_bytes = config.limits.max_image_bytes;
  mopts.images.cache = std::make_shared<decoders::ImageCache>(
      decoders::ImageCacheLimits{config.limits.image_cache_bytes, 512});
  // libdw reads profiled binaries (symbols, DWARF, CFI) in pathprof-symbolizer, unprivileged
  // and sandboxed: the daemon's privilege is not a crafted binary's to take.
  mopts.symbolize_in = pipeline::SymbolizeIn::kHelper;
  pipeline::SessionManager sessions(mopts);
  PeerRegistry peers;
  ProfilerService service(&sessions, &peers, config);

  const auto fail = [](const Status& s) {  // each message names what failed and why
    Log(kLogError, "%s", s.message().c_str());
    return 1;
  };
  auto continuous = StartContinuous(config, sessions, service, mopts.images);
  if (!continuous.ok()) return fail(continuous.status());
  UnixListener unix_listener;
  if (Status s = unix_listener.Bind(config.socket_path, config.socket_group); !s.ok())
    return fail(s);
  auto server = StartGrpcServer(config, service, &peers);
  if (!server.ok()) return fail(server.status());
  ConnectionLimits connection_limits;
  connection_limits.total = config.limits.max_connections;
  connection_limits.per_client = config.limits.max_connections_per_client;
  connection_limits.admin_reserve = config.limits.admin_reserved_connections;
  connection_limits.guaranteed_per_client = config.limits.guaranteed_connections_per_client;
  connection_limits.idle_timeout = std::chrono::seconds(config.limits.idle_connection_timeout_s);
  connection_limits.admin_group = config.admin_group;
  connection_limits.streams_before_ack = config.limits.max_streams_per_connection;
  unix_listener.Start(server->get(), &peers, connection_limits);
  service.SetClientCounter([&peers] {
    peers.Prune();
    return peers.size();
  });
  MetricsServer metrics;
  if (Status s = StartMetrics(config, service, unix_listener, peers, counters, &metrics); !s.ok())
    return fail(s);

  Log(kLogNotice, "pathprofd serving on %s%s%s", config.socket_path.c_str(),
      config.tcp_address.empty() ? "" : " and TLS ",
      config.tcp_address.empty() ? "" : config.tcp_address.c_str());
  sd_notifyf(0, "READY=1\nSTATUS=serving on %s\nMAINPID=%d", config.socket_path.c_str(), getpid());
  Watchdog watchdog;
  watchdog.Start();
  ServeUntilTerminated(signals, flags, &config, service, &counters);

  Log(kLogNotice, "stopping: ending streams, stopping sessions, releasing tracees");
  sd_notify(0, "STOPPING=1");
  (*server)->GetHealthCheckService()->SetServingStatus(kServiceName, false);
  service.BeginShutdown();
  unix_listener.Stop();
  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  const size_t stopped = sessions.StopAll();  // in parallel: each detaches within ~1 s
  metrics.Stop();
  if (*continuous) (*continuous)->Stop();
  Log(kLogNotice, "pathprofd stopped (%zu session(s) stopped)", stopped);
  return 0;
}

}  // namespace
}  // namespace pathprof::daemon

int main(int argc, char** argv) {
  return pathprof::daemon::Main(argc, argv);
}
