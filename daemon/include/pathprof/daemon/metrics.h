// Prometheus text exposition (format 0.0.4) of the daemon's health and per-target accounting,
// served at http://ADDRESS/metrics by cpp-httplib on its own thread (never on gRPC's threads).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "pathprof/core/status.h"
#include "pathprof/daemon/http2_guard.h"
#include "pathprof/daemon/service.h"
#include "pathprof/decoders/image_cache.h"
#include "pathprof/pipeline/symbol_service.h"

namespace httplib {
class Server;
}

namespace pathprof::daemon {

struct DaemonHealth {
  double start_unix_s = 0;
  uint64_t reloads = 0;
  uint64_t reload_failures = 0;
  uint64_t connections_accepted = 0;
  size_t connections_open = 0;
  uint64_t connections_refused_per_client = 0;
  uint64_t connections_refused_total = 0;
  uint64_t connections_closed_idle = 0;  // shut down at limits.idle_connection_timeout_s
  // Closed by the HTTP/2 guard before the client acknowledged the daemon's SETTINGS, by
  // Http2Guard::Reason.
  uint64_t connections_closed_http2_guard[Http2Guard::kReasons] = {};
  bool per_session = false;  // metrics.per_session: label target series with session and pid
  decoders::ImageCacheStats images;
  // The sessions' symbolizer helper (pathprof-symbolizer).
  pipeline::SymbolHelperStats symbolizer;
};

std::string RenderMetrics(const ProfilerService& service, const DaemonHealth& health);

class MetricsServer {
 public:
  MetricsServer();
  ~MetricsServer();
  // `address` is host:port (port 0 picks one; see port()). Returns once listening.
  Status Start(const std::string& address, std::function<std::string()> render);
  void Stop();
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace pathprof::daemon
