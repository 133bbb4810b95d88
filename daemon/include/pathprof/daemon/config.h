// pathprofd's configuration: a TOML file (default /etc/pathprof/pathprofd.toml, sample in
// packaging/pathprofd.toml) with command-line flags that override it. SIGHUP re-reads the file
// and re-applies the same flags, so a flag always wins over the file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::daemon {

// Bounds on everything a client can ask for. A request above a bound is refused with
// INVALID_ARGUMENT naming the bound (never silently truncated); a list's page size is lowered to
// its bound instead (AIP-158), and the next page token says that more follow.
struct Limits {
  uint32_t max_top_k = 1000;
  uint32_t default_top_k = 20;
  uint32_t max_depth = 512;              // calling-context tree depth, PCCT max_depth
  uint32_t max_targets_listed = 10000;   // the most ListTargets returns in one page
  uint32_t max_sessions_per_client = 8;  // held sessions (running and ended) per uid/TLS identity
  // An admin's own cap instead of max_sessions_per_client (0: 4 per online CPU, at least 32):
  // root profiling a host is not one user among many; max_sessions still bounds everyone.
  uint32_t max_sessions_per_admin = 0;
  uint32_t max_sessions = 64;              // held sessions, all clients together
  uint32_t admin_reserved_sessions = 8;    // of max_sessions (and its share of memory): admins only
  uint64_t max_memory_bytes = 1ull << 30;  // the profiles' memory bounds summed over held sessions
  uint64_t max_session_memory_bytes = 256ull << 20;     // one session's profile bounds
  uint64_t admin_reserved_memory_bytes = 256ull << 20;  // of max_memory_bytes: admins only
  // One non-admin client's share of the non-admin memory (max_memory_bytes less the admins'
  // reserve), so that one user cannot take it all and refuse the next.
  double client_memory_share = 0.5;
  // ELF images read to symbolize (at start only): the largest file read, and all held together.
  uint64_t max_image_bytes = 512ull << 20;
  uint64_t image_cache_bytes = 1ull << 30;
  // Connections on the Unix socket: all together (lowered to the fd limit less a margin), per
  // client, and the last ones kept for admins; a connection idle this long is closed.
  uint32_t max_connections = 4096;
  uint32_t max_connections_per_client = 64;
  uint32_t admin_reserved_connections = 64;
  // A client holding fewer connections than this is admitted even when max_connections is
  // reached (up to the fd bound), so that users who fill the cap cannot lock out another user.
  uint32_t guaranteed_connections_per_client = 2;
  // A connection with no call in a handler for this long is closed: idle, or holding only
  // streams that never sent their request (those never reach a handler).
  uint32_t idle_connection_timeout_s = 60;
  // HTTP/2 streams open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS); more is a
  // protocol error that closes the connection.
  uint32_t max_streams_per_connection = 100;
  // Memory gRPC may hold for every connection together (its resource quota): past it, gRPC
  // cancels streams to get back under.
  uint64_t grpc_memory_bytes = 512ull << 20;
  uint32_t max_streams = 64;  // concurrent WatchHotPaths streams, all clients
  uint32_t max_streams_per_client = 8;
  uint32_t admin_reserved_streams = 8;  // of max_streams: admins only
  uint32_t min_watch_interval_ms = 100;
  uint32_t max_duration_s = 7 * 86400;
  uint32_t max_hpt_entries = 1u << 20;
  uint32_t max_osp_entries = 1u << 22;
  uint32_t max_pcct_nodes = 1u << 22;
  uint32_t max_stack_hz = 10000;
  uint32_t max_window_branches = 4096;
  uint32_t max_name_length = 4096;       // names, filters, cgroup paths
  uint32_t max_tree_nodes = 100000;      // nodes in one CallingContextTree reply
  uint32_t max_pids_per_session = 1024;  // processes an executable name or cgroup may match
  double rate_qps = 1000;                // per client: token bucket refill rate
  double rate_burst = 2000;              // per client: bucket size
};

// A client certificate identity (CN or SAN) accepted over TCP, and the uid it acts as
// (0: sees everything, like root on the Unix socket).
struct TlsIdentity {
  std::string name;
  uint32_t uid = 0;
};

// Continuous mode ([continuous] in the TOML; docs/fleet.md): profile the selected processes at a
// low rate all the time, cut the profile into windows, keep the newest on disk and push each one.
struct PyroscopePushConfig {
  std::string url;  // empty: no Pyroscope push
  std::string app_name = "pathprof";
  std::string tenant_id, bearer_token, basic_user, basic_password;
};
// A backend spoken over gRPC: Parca's profile store, an OTLP receiver.
struct GrpcPushConfig {
  std::string target;  // host:port; empty: no push to this backend
  bool use_tls = false;
  std::string bearer_token;
};
struct ParcaPushConfig : GrpcPushConfig {};
struct OtlpPushConfig : GrpcPushConfig {
  bool include_pprof = false;  // also send each window's pprof as the original payload
};
struct ContinuousConfig {
  bool enabled = false;
  uint32_t window_s = 60;  // one pprof window per this many seconds (1..3600)
  uint32_t stack_hz = 19;  // eBPF stack sampling rate (1..1000)
  // Branch source: none (stacks only), snapshot (windows from the samples' snapshots: no stop,
  // every process), or, for named units, cgroups or executables only, auto, ptrace, lbr, pt.
  std::string source = "none";
  // Snapshot windows of the whole host (source snapshot): windows a second (0: 300 per online
  // CPU, at most 2,000: DefaultWindowBudget) and the emulation's CPU, a percentage of one core;
  // the sampler's snapshot rate per CPU follows from the first.
  uint32_t window_budget = 0;
  uint32_t window_cpu_percent = 2;
  // Source hybrid: the windows a second of each process it stops (its snapshots fell short).
  uint32_t hybrid_stop_hz = 20;
  std::string step_mode = "auto";  // copied from [ptrace] step_mode when the config is built
  // What to profile; all three empty: every process. Each entry is its own window series.
  std::vector<std::string> units;        // systemd units, e.g. "nginx.service"
  std::vector<std::string> cgroups;      // cgroup v2 paths, e.g. "/system.slice/foo.service"
  std::vector<std::string> executables;  // absolute paths of executable files
  uint32_t max_pids = 1024;              // per series and window; more are skipped, counted
  std::string host;                      // the host label; empty: gethostname() (HostLabel)
  std::string archive_dir = "/var/lib/pathprof/windows";
  uint32_t keep_windows = 60;              // newest windows kept on disk (at least 1)
  uint64_t max_disk_bytes = 256ull << 20;  // bytes of all kept windows (at least 4096)
  // With a branch source: the branches of each window's newest branch windows archived beside
  // its pprof as a .pbs (pathctl paths and pathctl export read it), shared by the series'
  // processes in proportion to their windows; 0: none (~4-7 bytes a branch on disk). Each
  // process's store keeps its newest max(65,536, this) branches for it (24 bytes each).
  uint32_t archive_branch_events = 1u << 16;
  uint32_t push_queue = 16;    // windows waiting per backend
  uint32_t push_attempts = 5;  // per window, first try included
  PyroscopePushConfig pyroscope;
  ParcaPushConfig parca;
  OtlpPushConfig otlp;
};

// The whole host's snapshot windows a second when the config does not say: 300 per CPU, so
// that the daemon's work on them stays near 2% of one core per CPU sampled (each window costs
// it ~35 us from the ring to the path engine on a 2-vCPU KVM guest: docs/performance.md), at
// most 2,000.
inline uint32_t DefaultWindowBudget(long online_cpus) {
  return static_cast<uint32_t>(std::min<long>(2000, 300 * std::max(1L, online_cpus)));
}

struct DaemonConfig {
  std::string socket_path = "/run/pathprof/pathprofd.sock";
  std::string socket_group = "pathprof";  // owns the socket (mode 0660); missing group: root only
  std::string admin_group = "pathprof";   // members see and profile every process

  std::string tcp_address;  // host:port; empty: no TCP listener
  std::string tls_cert_file, tls_key_file;
  std::string tls_client_ca_file;  // set: client certificates are required and verified
  std::vector<TlsIdentity> tls_identities;

  std::string metrics_address;  // host:port for Prometheus text at /metrics; empty: off
  // /metrics is unauthenticated (any local user can read it): per-target series, labelled with
  // session ids and pids, only when the admin who writes the config asks for them.
  bool metrics_per_session = false;

  int log_level = 6;  // syslog priority: messages above this are not written (7 = debug)
  // [ptrace] step_mode: how bursts step a window when a session leaves it unset (and in
  // continuous mode): auto (what the step probe found works best), emulate, breakpoints, int3,
  // step.
  std::string step_mode = "auto";
  // [ptrace] tracer_as_target: an admin's tracer of a plain user's process runs as that user
  // (pipeline::SessionConfig::tracer_as_target). Confined sessions' tracers always do.
  bool tracer_as_target = false;
  Limits limits;
  ContinuousConfig continuous;
};

// Reads the [continuous] table (with its [continuous.pyroscope], .parca and .otlp) into
// `c`, checking ranges; unknown keys are errors like everywhere else.
Status ReadContinuousTable(const void* toml_table, ContinuousConfig& c);

// The host every export names (continuous windows' host label, a session export's host.name):
// c.host, else gethostname(); empty when neither is known.
std::string HostLabel(const ContinuousConfig& c);

// Reads a TOML file over `base` (keys absent from the file keep base's values). Unknown keys are
// errors, so a typo never silently falls back to a default.
Result<DaemonConfig> LoadConfigFile(const std::string& path, DaemonConfig base = {});
Result<DaemonConfig> ParseConfigText(const std::string& text, const std::string& origin,
                                     DaemonConfig base = {});

// The command line: `--config FILE` plus flags that override the file (see FlagsHelp()).
struct Flags {
  std::string config_path = "/etc/pathprof/pathprofd.toml";
  bool config_given = false;
  std::vector<std::pair<std::string, std::string>> overrides;  // flag name, value, in order
  bool help = false;
  bool version = false;
};
Result<Flags> ParseFlags(int argc, char** argv);
const char* FlagsHelp();

// Loads the file (missing is fine unless --config named it) and applies the flag overrides.
Result<DaemonConfig> BuildConfig(const Flags& flags);

}  // namespace pathprof::daemon
