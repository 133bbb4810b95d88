// The [continuous] section of pathprofd.toml. Kept apart from config.cc because its keys live in
// nested tables and arrays that the flat key map there does not describe.
#include <unistd.h>

#include <toml++/toml.h>

#include "pathprof/daemon/config.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::daemon {
namespace {

Status Bad(const std::string& key, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, "config key continuous." + key + ": " + what);
}

Status ReadUint(const toml::node& n, const std::string& key, uint64_t lo, uint64_t hi,
                uint64_t* out) {
  auto v = n.value<int64_t>();
  if (!v || *v < 0) return Bad(key, "expects a non-negative integer");
  if (static_cast<uint64_t>(*v) < lo || static_cast<uint64_t>(*v) > hi)
    return Bad(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = static_cast<uint64_t>(*v);
  return Status::Ok();
}

Status ReadString(const toml::node& n, const std::string& key, std::string* out) {
  auto v = n.value<std::string>();
  if (!v) return Bad(key, "expects a string");
  *out = *v;
  return Status::Ok();
}

Status ReadStrings(const toml::node& n, const std::string& key, std::vector<std::string>* out) {
  const toml::array* arr = n.as_array();
  if (!arr) return Bad(key, "expects an array of strings");
  out->clear();
  for (const toml::node& e : *arr) {
    auto v = e.value<std::string>();
    if (!v || v->empty()) return Bad(key, "expects non-empty strings");
    out->push_back(*v);
  }
  return Status::Ok();
}

Status ReadPyroscope(const toml::table& t, PyroscopePushConfig& p) {
  for (const auto& [k, n] : t) {
    std::string key(k.str());
    std::string* field = key == "url"              ? &p.url
                         : key == "app_name"       ? &p.app_name
                         : key == "tenant_id"      ? &p.tenant_id
                         : key == "bearer_token"   ? &p.bearer_token
                         : key == "basic_user"     ? &p.basic_user
                         : key == "basic_password" ? &p.basic_password
                                                   : nullptr;
    if (!field) return Bad("pyroscope." + key, "unknown key (see packaging/pathprofd.toml)");
    PATHPROF_RETURN_IF_ERROR(ReadString(n, "pyroscope." + key, field));
  }
  if (!p.url.empty() && p.url.rfind("http://", 0) != 0 && p.url.rfind("https://", 0) != 0)
    return Bad("pyroscope.url",
               "expects http://host:port or https://host:port, got '" + p.url + "'");
  return Status::Ok();
}

// [continuous.parca] and [continuous.otlp]: target, use_tls, bearer_token, and for OTLP
// include_pprof (`include_pprof` null: the key is unknown).
Status ReadGrpcPush(const toml::table& t, const std::string& table, GrpcPushConfig& p,
                    bool* include_pprof) {
  for (const auto& [k, n] : t) {
    const std::string key = table + "." + std::string(k.str());
    if (k.str() == "target") {
      PATHPROF_RETURN_IF_ERROR(ReadString(n, key, &p.target));
    } else if (k.str() == "bearer_token") {
      PATHPROF_RETURN_IF_ERROR(ReadString(n, key, &p.bearer_token));
    } else if (k.str() == "use_tls" || (k.str() == "include_pprof" && include_pprof)) {
      auto v = n.value<bool>();
      if (!v) return Bad(key, "expects true or false");
      *(k.str() == "use_tls" ? &p.use_tls : include_pprof) = *v;
    } else {
      return Bad(key, "unknown key (see packaging/pathprofd.toml)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadContinuousTable(const void* toml_table, ContinuousConfig& c) {
  const auto* table = static_cast<const toml::table*>(toml_table);
  if (!table) return Bad("", "[continuous] must be a table");
  for (const auto& [k, n] : *table) {
    std::string key(k.str());
    uint64_t v = 0;
    if (key == "enabled") {
      auto b = n.value<bool>();
      if (!b) return Bad(key, "expects true or false");
      c.enabled = *b;
    } else if (key == "window_s") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 3600, &v));
      c.window_s = static_cast<uint32_t>(v);
    } else if (key == "stack_hz") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 1000, &v));
      c.stack_hz = static_cast<uint32_t>(v);
    } else if (key == "source") {
      PATHPROF_RETURN_IF_ERROR(ReadString(n, key, &c.source));
      pipeline::SourceChoice unused;
      if (!pipeline::ParseSourceChoice(c.source, &unused))
        return Bad(
            key, "expects none, snapshot, hybrid, auto, ptrace, lbr or pt, got '" + c.source + "'");
    } else if (key == "window_budget") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 0, 1000000, &v));  // 0: DefaultWindowBudget
      c.window_budget = static_cast<uint32_t>(v);
    } else if (key == "window_cpu_percent") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 100, &v));
      c.window_cpu_percent = static_cast<uint32_t>(v);
    } else if (key == "hybrid_stop_hz") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 1000, &v));
      c.hybrid_stop_hz = static_cast<uint32_t>(v);
    } else if (key == "units") {
      PATHPROF_RETURN_IF_ERROR(ReadStrings(n, key, &c.units));
    } else if (key == "cgroups") {
      PATHPROF_RETURN_IF_ERROR(ReadStrings(n, key, &c.cgroups));
      for (const std::string& g : c.cgroups)
        if (g[0] != '/' || g.find("..") != std::string::npos)
          return Bad(key, "'" + g + "' must be an absolute cgroup path without '..'");
    } else if (key == "executables") {
      PATHPROF_RETURN_IF_ERROR(ReadStrings(n, key, &c.executables));
      // A series holds what the admin named: a file, which only those who may write its folder
      // can put there. A name (comm, file name) is any user's to give a program of their own.
      for (const std::string& e : c.executables)
        if (e[0] != '/' || e.find("/../") != std::string::npos || e.ends_with("/.."))
          return Bad(key, "'" + e +
                              "' must be an executable's absolute path (e.g. /usr/sbin/nginx): "
                              "a name would let any user's program of that name join the series");
    } else if (key == "max_pids") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 1u << 20, &v));
      c.max_pids = static_cast<uint32_t>(v);
    } else if (key == "host") {
      PATHPROF_RETURN_IF_ERROR(ReadString(n, key, &c.host));
    } else if (key == "archive_dir") {
      PATHPROF_RETURN_IF_ERROR(ReadString(n, key, &c.archive_dir));
      if (c.archive_dir.empty() || c.archive_dir[0] != '/')
        return Bad(key, "expects an absolute folder path");
    } else if (key == "keep_windows") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 1u << 20, &v));
      c.keep_windows = static_cast<uint32_t>(v);
    } else if (key == "max_disk_bytes") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 4096, 1ull << 44, &v));
      c.max_disk_bytes = v;
    } else if (key == "archive_branch_events") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 0, 1u << 24, &v));
      c.archive_branch_events = static_cast<uint32_t>(v);
    } else if (key == "push_queue") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 4096, &v));
      c.push_queue = static_cast<uint32_t>(v);
    } else if (key == "push_attempts") {
      PATHPROF_RETURN_IF_ERROR(ReadUint(n, key, 1, 100, &v));
      c.push_attempts = static_cast<uint32_t>(v);
    } else if (key == "pyroscope") {
      if (!n.as_table()) return Bad(key, "expects a table");
      PATHPROF_RETURN_IF_ERROR(ReadPyroscope(*n.as_table(), c.pyroscope));
    } else if (key == "parca") {
      if (!n.as_table()) return Bad(key, "expects a table");
      PATHPROF_RETURN_IF_ERROR(ReadGrpcPush(*n.as_table(), "parca", c.parca, nullptr));
    } else if (key == "otlp") {
      if (!n.as_table()) return Bad(key, "expects a table");
      PATHPROF_RETURN_IF_ERROR(ReadGrpcPush(*n.as_table(), "otlp", c.otlp, &c.otlp.include_pprof));
    } else {
      return Bad(key, "unknown key (see packaging/pathprofd.toml)");
    }
  }
  // A branch source that stops threads (or PMU-samples them) on every process of the host
  // would do so to all of them, the daemon's neighbours included: only on processes someone
  // named. Snapshot windows stop nothing: they come from the stack samples' snapshots.
  // "hybrid" is snapshot windows that stop a process only where its snapshots fall short, a
  // few at a time (docs/fleet.md): naming it is the configuration that allows those stops.
  if (c.source != "none" && c.source != "snapshot" && c.source != "hybrid" && c.units.empty() &&
      c.cgroups.empty() && c.executables.empty())
    return Bad("source", "'" + c.source +
                             "' needs units, cgroups or executables (a branch source that stops "
                             "threads is never run on every process); use \"none\" for "
                             "host-wide stacks, \"snapshot\" for host-wide hot paths, or "
                             "\"hybrid\" to let the few processes whose snapshots fall short "
                             "be stopped");
  return Status::Ok();
}

std::string HostLabel(const ContinuousConfig& c) {
  if (!c.host.empty()) return c.host;
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

}  // namespace pathprof::daemon
