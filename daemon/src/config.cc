#include "pathprof/daemon/config.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "pathprof/pipeline/session_config.h"

namespace pathprof::daemon {
namespace {

// One settable key: how to read it from TOML and from a flag string.
struct Key {
  std::function<Status(const toml::node&, DaemonConfig&)> from_toml;
  std::function<Status(const std::string&, DaemonConfig&)> from_flag;
};

Status Bad(const std::string& key, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, "config key " + key + ": " + what);
}

template <typename T>
Key UintKey(const std::string& name, T Limits::*field, uint64_t max) {
  auto set = [name, field, max](uint64_t v, DaemonConfig& c) -> Status {
    if (v > max) return Bad(name, "must be at most " + std::to_string(max));
    c.limits.*field = static_cast<T>(v);
    return Status::Ok();
  };
  return Key{[name, set](const toml::node& n, DaemonConfig& c) -> Status {
               auto v = n.value<int64_t>();
               if (!v || *v < 0) return Bad(name, "expects a non-negative integer");
               return set(static_cast<uint64_t>(*v), c);
             },
             [name, set](const std::string& s, DaemonConfig& c) -> Status {
               char* end = nullptr;
               errno = 0;
               unsigned long long v = std::strtoull(s.c_str(), &end, 0);
               if (s.empty() || *end || errno || s[0] == '-')
                 return Bad(name, "expects a non-negative integer, got '" + s + "'");
               return set(v, c);
             }};
}

Key DoubleKey(const std::string& name, double Limits::*field, double max = 1e9) {
  auto set = [name, field, max](double v, DaemonConfig& c) -> Status {
    if (!(v > 0) || v > max) return Bad(name, "must be in (0, " + std::to_string(max) + "]");
    c.limits.*field = v;
    return Status::Ok();
  };
  return Key{[name, set](const toml::node& n, DaemonConfig& c) -> Status {
               auto v = n.value<double>();
               if (!v) return Bad(name, "expects a number");
               return set(*v, c);
             },
             [name, set](const std::string& s, DaemonConfig& c) -> Status {
               char* end = nullptr;
               double v = std::strtod(s.c_str(), &end);
               if (s.empty() || *end) return Bad(name, "expects a number, got '" + s + "'");
               return set(v, c);
             }};
}

Key StringKey(const std::string& name, std::string DaemonConfig::*field) {
  return Key{[name, field](const toml::node& n, DaemonConfig& c) -> Status {
               auto v = n.value<std::string>();
               if (!v) return Bad(name, "expects a string");
               c.*field = *v;
               return Status::Ok();
             },
             [field](const std::string& s, DaemonConfig& c) -> Status {
               c.*field = s;
               return Status::Ok();
             }};
}

Key BoolKey(const std::string& name, bool DaemonConfig::*field) {
  return Key{[name, field](const toml::node& n, DaemonConfig& c) -> Status {
               auto v = n.value<bool>();
               if (!v) return Bad(name, "expects true or false");
               c.*field = *v;
               return Status::Ok();
             },
             [name, field](const std::string& s, DaemonConfig& c) -> Status {
               if (s != "true" && s != "false")
                 return Bad(name, "expects true or false, got '" + s + "'");
               c.*field = s == "true";
               return Status::Ok();
             }};
}

Status SetLogLevel(const std::string& s, DaemonConfig& c) {
  static const std::map<std::string, int> kLevels = {
      {"error", 3}, {"warning", 4}, {"notice", 5}, {"info", 6}, {"debug", 7}};
  auto it = kLevels.find(s);
  if (it == kLevels.end())
    return Bad("log_level", "expects error, warning, notice, info or debug, got '" + s + "'");
  c.log_level = it->second;
  return Status::Ok();
}

// Dotted TOML key -> setter. The flag for a key is its last component with '_' -> '-'
// (e.g. limits.max_top_k is --max-top-k), plus a few short aliases in ParseFlags.
const std::map<std::string, Key>& Keys() {
  static const std::map<std::string, Key> keys = [] {
    std::map<std::string, Key> k;
    k["socket.path"] = StringKey("socket.path", &DaemonConfig::socket_path);
    k["socket.group"] = StringKey("socket.group", &DaemonConfig::socket_group);
    k["auth.admin_group"] = StringKey("auth.admin_group", &DaemonConfig::admin_group);
    k["tcp.address"] = StringKey("tcp.address", &DaemonConfig::tcp_address);
    k["tcp.tls_cert"] = StringKey("tcp.tls_cert", &DaemonConfig::tls_cert_file);
    k["tcp.tls_key"] = StringKey("tcp.tls_key", &DaemonConfig::tls_key_file);
    k["tcp.tls_client_ca"] = StringKey("tcp.tls_client_ca", &DaemonConfig::tls_client_ca_file);
    k["metrics.address"] = StringKey("metrics.address", &DaemonConfig::metrics_address);
    k["metrics.per_session"] = BoolKey("metrics.per_session", &DaemonConfig::metrics_per_session);
    k["ptrace.tracer_as_target"] =
        BoolKey("ptrace.tracer_as_target", &DaemonConfig::tracer_as_target);
    k["log.level"] = Key{[](const toml::node& n, DaemonConfig& c) -> Status {
                           auto v = n.value<std::string>();
                           if (!v) return Bad("log.level", "expects a string");
                           return SetLogLevel(*v, c);
                         },
                         SetLogLevel};
    auto step_mode = [](const std::string& v, DaemonConfig& c) -> Status {
      stepping::StepRequest unused;
      if (!stepping::ParseStepRequest(v, &unused))
        return Bad("ptrace.step_mode",
                   "expects " + stepping::StepRequestWords() + ", got '" + v + "'");
      c.step_mode = v;
      return Status::Ok();
    };
    k["ptrace.step_mode"] = Key{[step_mode](const toml::node& n, DaemonConfig& c) -> Status {
                                  auto v = n.value<std::string>();
                                  if (!v) return Bad("ptrace.step_mode", "expects a string");
                                  return step_mode(*v, c);
                                },
                                step_mode};
    k["limits.max_top_k"] = UintKey("limits.max_top_k", &Limits::max_top_k, 1u << 20);
    k["limits.default_top_k"] = UintKey("limits.default_top_k", &Limits::default_top_k, 1u << 20);
    k["limits.max_depth"] = UintKey("limits.max_depth", &Limits::max_depth, 1u << 16);
    k["limits.max_targets_listed"] =
        UintKey("limits.max_targets_listed", &Limits::max_targets_listed, 1u << 24);
    k["limits.max_sessions_per_client"] =
        UintKey("limits.max_sessions_per_client", &Limits::max_sessions_per_client, 1u << 16);
    k["limits.max_sessions_per_admin"] =
        UintKey("limits.max_sessions_per_admin", &Limits::max_sessions_per_admin, 1u << 16);
    k["limits.max_sessions"] = UintKey("limits.max_sessions", &Limits::max_sessions, 1u << 16);
    k["limits.admin_reserved_sessions"] =
        UintKey("limits.admin_reserved_sessions", &Limits::admin_reserved_sessions, 1u << 16);
    k["limits.max_session_memory_bytes"] =
        UintKey("limits.max_session_memory_bytes", &Limits::max_session_memory_bytes, 1ull << 40);
    k["limits.admin_reserved_memory_bytes"] = UintKey(
        "limits.admin_reserved_memory_bytes", &Limits::admin_reserved_memory_bytes, 1ull << 40);
    k["limits.max_memory_bytes"] =
        UintKey("limits.max_memory_bytes", &Limits::max_memory_bytes, 1ull << 40);
    k["limits.max_image_bytes"] =
        UintKey("limits.max_image_bytes", &Limits::max_image_bytes, 1ull << 40);
    k["limits.image_cache_bytes"] =
        UintKey("limits.image_cache_bytes", &Limits::image_cache_bytes, 1ull << 40);
    k["limits.max_connections"] =
        UintKey("limits.max_connections", &Limits::max_connections, 1u << 20);
    k["limits.max_connections_per_client"] =
        UintKey("limits.max_connections_per_client", &Limits::max_connections_per_client, 1u << 20);
    k["limits.admin_reserved_connections"] =
        UintKey("limits.admin_reserved_connections", &Limits::admin_reserved_connections, 1u << 20);
    k["limits.guaranteed_connections_per_client"] =
        UintKey("limits.guaranteed_connections_per_client",
                &Limits::guaranteed_connections_per_client, 1u << 10);
    k["limits.idle_connection_timeout_s"] =
        UintKey("limits.idle_connection_timeout_s", &Limits::idle_connection_timeout_s, 86400);
    k["limits.max_streams_per_connection"] =
        UintKey("limits.max_streams_per_connection", &Limits::max_streams_per_connection, 1u << 16);
    k["limits.grpc_memory_bytes"] =
        UintKey("limits.grpc_memory_bytes", &Limits::grpc_memory_bytes, 1ull << 40);
    k["limits.admin_reserved_streams"] =
        UintKey("limits.admin_reserved_streams", &Limits::admin_reserved_streams, 1u << 16);
    k["limits.max_streams"] = UintKey("limits.max_streams", &Limits::max_streams, 1u << 16);
    k["limits.max_streams_per_client"] =
        UintKey("limits.max_streams_per_client", &Limits::max_streams_per_client, 1u << 16);
    k["limits.min_watch_interval_ms"] =
        UintKey("limits.min_watch_interval_ms", &Limits::min_watch_interval_ms, 3600000);
    k["limits.max_duration_s"] =
        UintKey("limits.max_duration_s", &Limits::max_duration_s, 365u * 86400);
    k["limits.max_hpt_entries"] =
        UintKey("limits.max_hpt_entries", &Limits::max_hpt_entries, 1u << 26);
    k["limits.max_osp_entries"] =
        UintKey("limits.max_osp_entries", &Limits::max_osp_entries, 1u << 28);
    k["limits.max_pcct_nodes"] =
        UintKey("limits.max_pcct_nodes", &Limits::max_pcct_nodes, 1u << 28);
    k["limits.max_stack_hz"] = UintKey("limits.max_stack_hz", &Limits::max_stack_hz, 100000);
    k["limits.max_window_branches"] =
        UintKey("limits.max_window_branches", &Limits::max_window_branches, 1u << 20);
    k["limits.max_name_length"] =
        UintKey("limits.max_name_length", &Limits::max_name_length, 1u << 20);
    k["limits.max_tree_nodes"] =
        UintKey("limits.max_tree_nodes", &Limits::max_tree_nodes, 1u << 22);
    k["limits.max_pids_per_session"] =
        UintKey("limits.max_pids_per_session", &Limits::max_pids_per_session, 1u << 20);
    k["limits.rate_qps"] = DoubleKey("limits.rate_qps", &Limits::rate_qps);
    k["limits.rate_burst"] = DoubleKey("limits.rate_burst", &Limits::rate_burst);
    k["limits.client_memory_share"] =
        DoubleKey("limits.client_memory_share", &Limits::client_memory_share, 1.0);
    return k;
  }();
  return keys;
}

std::string FlagName(const std::string& key) {
  std::string last = key.substr(key.rfind('.') + 1);
  for (char& ch : last)
    if (ch == '_') ch = '-';
  return last;
}

Status ReadIdentities(const toml::node& n, DaemonConfig& c) {
  const toml::array* arr = n.as_array();
  if (!arr) return Bad("tcp.clients", "expects an array of tables {identity = \"..\", uid = N}");
  c.tls_identities.clear();
  for (const toml::node& e : *arr) {
    const toml::table* t = e.as_table();
    if (!t) return Bad("tcp.clients", "each entry is a table {identity = \"..\", uid = N}");
    TlsIdentity id;
    auto name = (*t)["identity"].value<std::string>();
    if (!name || name->empty()) return Bad("tcp.clients", "an entry has no identity");
    id.name = *name;
    auto uid = (*t)["uid"].value<int64_t>();
    if ((*t)["uid"] && (!uid || *uid < 0 || *uid > 0xffffffffll))
      return Bad("tcp.clients", "uid of " + id.name + " must be a uid");
    id.uid = uid ? static_cast<uint32_t>(*uid) : 0;
    c.tls_identities.push_back(id);
  }
  return Status::Ok();
}

Status Walk(const toml::table& table, const std::string& prefix, DaemonConfig& c,
            const std::string& origin) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (key == "continuous") {
      Status s = ReadContinuousTable(node.as_table(), c.continuous);
      if (!s.ok()) return Error(s.code(), origin + ": " + s.message());
      continue;
    }
    if (key == "tcp.clients") {
      PATHPROF_RETURN_IF_ERROR(ReadIdentities(node, c));
      continue;
    }
    if (const toml::table* sub = node.as_table()) {
      PATHPROF_RETURN_IF_ERROR(Walk(*sub, key, c, origin));
      continue;
    }
    auto it = Keys().find(key);
    if (it == Keys().end())
      return Error(ErrorCode::kInvalidArgument,
                   origin + ": unknown key '" + key + "' (see packaging/pathprofd.toml)");
    Status s = it->second.from_toml(node, c);
    if (!s.ok()) return Error(s.code(), origin + ": " + s.message());
  }
  return Status::Ok();
}

}  // namespace

Result<DaemonConfig> ParseConfigText(const std::string& text, const std::string& origin,
                                     DaemonConfig base) {
  toml::table table;
  try {
    table = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
        << e.description();
    return Error(ErrorCode::kInvalidArgument, msg.str());
  }
  PATHPROF_RETURN_IF_ERROR(Walk(table, "", base, origin));
  return base;
}

Result<DaemonConfig> LoadConfigFile(const std::string& path, DaemonConfig base) {
  std::ifstream in(path);
  if (!in)
    return Error(ErrorCode::kNotFound,
                 "cannot read config file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfigText(ss.str(), path, std::move(base));
}

const char* FlagsHelp() {
  return "usage: pathprofd [--config FILE] [flags]\n"
         "\n"
         "  --config FILE          TOML config (default /etc/pathprof/pathprofd.toml)\n"
         "  --socket PATH          Unix socket (default /run/pathprof/pathprofd.sock)\n"
         "  --socket-group NAME    group owning the socket (mode 0660)\n"
         "  --admin-group NAME     members see and profile every process\n"
         "  --tcp HOST:PORT        also listen on TCP with TLS (needs --tls-cert/--tls-key)\n"
         "  --tls-cert FILE, --tls-key FILE, --tls-client-ca FILE\n"
         "  --metrics HOST:PORT    Prometheus text format at http://HOST:PORT/metrics\n"
         "  --log-level LEVEL      error, warning, notice, info (default), debug\n"
         "  --max-top-k N, --max-depth N, --max-sessions N, --max-sessions-per-client N,\n"
         "  --max-sessions-per-admin N,\n"
         "  --max-memory-bytes N, --max-streams N, --max-streams-per-client N,\n"
         "  --rate-qps X, --rate-burst X, ... : any [limits] key of the config file\n"
         "  --version              print the version and exit\n";
}

Result<Flags> ParseFlags(int argc, char** argv) {
  static const std::map<std::string, std::string> kAliases = {
      {"socket", "socket.path"},
      {"socket-group", "socket.group"},
      {"admin-group", "auth.admin_group"},
      {"tcp", "tcp.address"},
      {"tls-cert", "tcp.tls_cert"},
      {"tls-key", "tcp.tls_key"},
      {"tls-client-ca", "tcp.tls_client_ca"},
      {"metrics", "metrics.address"},
      {"log-level", "log.level"}};
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      f.help = true;
      continue;
    }
    if (a == "--version") {
      f.version = true;
      continue;
    }
    if (a.rfind("--", 0) != 0)
      return Error(ErrorCode::kInvalidArgument, "unexpected argument '" + a + "' (see --help)");
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error(ErrorCode::kInvalidArgument, "--" + name + " needs a value");
    }
    if (name == "config") {
      f.config_path = value;
      f.config_given = true;
      continue;
    }
    std::string key;
    if (auto it = kAliases.find(name); it != kAliases.end()) {
      key = it->second;
    } else {
      for (const auto& [k, unused] : Keys())
        if (k.rfind("limits.", 0) == 0 && FlagName(k) == name) key = k;
    }
    if (key.empty())
      return Error(ErrorCode::kInvalidArgument, "unknown flag --" + name + " (see --help)");
    f.overrides.emplace_back(key, value);
  }
  return f;
}

Result<DaemonConfig> BuildConfig(const Flags& flags) {
  DaemonConfig c;
  std::ifstream probe(flags.config_path);
  if (probe || flags.config_given) {
    PATHPROF_ASSIGN_OR_RETURN(auto loaded, LoadConfigFile(flags.config_path));
    c = std::move(loaded);
  }
  for (const auto& [key, value] : flags.overrides) {
    Status s = Keys().at(key).from_flag(value, c);
    if (!s.ok()) return Error(s.code(), "flag --" + FlagName(key) + ": " + s.message());
  }
  if (c.limits.default_top_k > c.limits.max_top_k) c.limits.default_top_k = c.limits.max_top_k;
  if (!c.tcp_address.empty() && (c.tls_cert_file.empty() || c.tls_key_file.empty()))
    return Error(ErrorCode::kInvalidArgument,
                 "tcp.address " + c.tcp_address +
                     " needs tcp.tls_cert and tcp.tls_key (pathprofd serves TCP only over TLS)");
  return c;
}

}  // namespace pathprof::daemon
