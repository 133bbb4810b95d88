#include "pathprof/daemon/admission.h"

#include <unistd.h>

#include <algorithm>

#include "pathprof/api/grpc_status.h"

namespace pathprof::daemon {
namespace {

std::string Mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// `limit`: the limits.* key to blame (ErrorInfo metadata), where one alone is.
AdmissionDecision Refuse(std::string message, std::string limit) {
  AdmissionDecision d;
  d.kind = AdmissionDecision::Kind::kRefuse;
  d.refusal = api::MakeError(grpc::StatusCode::RESOURCE_EXHAUSTED, std::move(message),
                             {.reason = v1::QUOTA_EXCEEDED, .limit = std::move(limit)});
  return d;
}

}  // namespace

uint32_t SessionsPerClient(const Limits& l, bool admin) {
  if (!admin) return l.max_sessions_per_client;
  if (l.max_sessions_per_admin > 0) return l.max_sessions_per_admin;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<uint32_t>(std::max<long>(32, 4 * std::max<long>(cpus, 1)));
}

AdmissionDecision Admit(const Limits& l, const Applicant& a, const std::vector<HeldSession>& held) {
  const uint64_t need = a.memory_bound_bytes;
  if (need > l.max_session_memory_bytes)
    return Refuse("the session's profiles may take " + Mib(need) +
                      ", above limits.max_session_memory_bytes " + Mib(l.max_session_memory_bytes) +
                      " (ask for smaller hpt/osp/pcct bounds or fewer processes)",
                  "limits.max_session_memory_bytes");
  const uint32_t reserve =
      l.max_sessions > 0 ? std::min(l.admin_reserved_sessions, l.max_sessions - 1) : 0;
  const uint32_t session_cap = a.admin ? l.max_sessions : l.max_sessions - reserve;
  const uint64_t memory_cap = a.admin ? l.max_memory_bytes
                                      : l.max_memory_bytes - std::min(l.admin_reserved_memory_bytes,
                                                                      l.max_memory_bytes / 2);
  const uint64_t client_memory_cap =
      a.admin ? memory_cap
              : static_cast<uint64_t>(static_cast<double>(memory_cap) * l.client_memory_share);

  uint32_t mine = 0, total = 0;
  uint64_t bytes = 0, mine_bytes = 0;
  const HeldSession* oldest_ended_mine = nullptr;
  for (const HeldSession& s : held) {
    ++total;
    bytes += s.memory_bound_bytes;
    if (!s.mine) continue;
    ++mine;
    mine_bytes += s.memory_bound_bytes;
    if (!s.running &&
        (!oldest_ended_mine || s.stopped_unix_ms < oldest_ended_mine->stopped_unix_ms))
      oldest_ended_mine = &s;
  }
  std::string over, limit;
  const char* per_client_key =
      a.admin ? "limits.max_sessions_per_admin" : "limits.max_sessions_per_client";
  if (mine >= SessionsPerClient(l, a.admin))
    limit = per_client_key, over = a.client_key + " holds " + std::to_string(mine) + " sessions (" +
                                   per_client_key + ", running and ended together)";
  else if (total >= session_cap)
    limit = "limits.max_sessions",
    over = std::to_string(total) + " sessions are held, the most " +
           (a.admin ? std::string("allowed (limits.max_sessions)")
                    : "a non-admin may fill (limits.max_sessions less "
                      "limits.admin_reserved_sessions)");
  else if (bytes + need > memory_cap)
    limit = "limits.max_memory_bytes",
    over = "the session's profiles may take " + Mib(need) + "; held sessions may take " +
           Mib(bytes) + " of the " + Mib(memory_cap) + " allowed (limits.max_memory_bytes" +
           (a.admin ? "" : " less limits.admin_reserved_memory_bytes") + ")";
  else if (mine_bytes + need > client_memory_cap)
    limit = "limits.client_memory_share",
    over = "the session's profiles may take " + Mib(need) + "; " + a.client_key +
           "'s sessions may take " + Mib(mine_bytes) + " of the " + Mib(client_memory_cap) +
           " one client may hold (limits.client_memory_share of the non-admin memory)";
  if (over.empty()) return {};
  if (oldest_ended_mine == nullptr)
    return Refuse(over +
                      "; none of yours has ended: stop one (pathctl stop) or delete one "
                      "(pathctl rm)",
                  limit);
  AdmissionDecision d;
  d.kind = AdmissionDecision::Kind::kEvict;
  d.evict_id = oldest_ended_mine->id;
  d.reason = std::move(over);
  return d;
}

}  // namespace pathprof::daemon
