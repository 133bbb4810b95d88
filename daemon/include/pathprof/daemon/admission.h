// Whether a new session may start under the daemon's quotas, and what makes room for it: the
// policy alone, over a snapshot of the held sessions, so that it is tested without a daemon.
// Every held session counts (an ended one keeps its profiles, and their memory, for the
// retention period): per client, in all, and in memory. A client at a cap makes room by
// evicting its own oldest ended session; nobody can evict another's, and the last
// admin_reserved_sessions places and admin_reserved_memory_bytes are only for admins, so that
// no non-admin can make the daemon refuse root. Each non-admin client gets at most its share
// (client_memory_share) of the non-admin memory, so that one user cannot refuse every other.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/daemon/config.h"

namespace pathprof::daemon {

struct HeldSession {
  std::string id;
  bool mine = false;     // held by the client asking
  bool running = false;  // an ended one may be evicted by its own client
  uint64_t memory_bound_bytes = 0;
  int64_t stopped_unix_ms = 0;
};

struct Applicant {
  bool admin = false;
  std::string client_key;           // "uid:1000", "tls:collector"
  uint64_t memory_bound_bytes = 0;  // the new session's
};

struct AdmissionDecision {
  enum class Kind { kAdmit, kEvict, kRefuse } kind = Kind::kAdmit;
  std::string evict_id;  // kEvict: the applicant's oldest ended session; decide again after it
  std::string reason;    // kEvict: the cap it was over, for the log
  grpc::Status refusal;  // kRefuse: RESOURCE_EXHAUSTED, saying which limit and what to do
};

AdmissionDecision Admit(const Limits& limits, const Applicant& applicant,
                        const std::vector<HeldSession>& held);

// The sessions one client may hold: max_sessions_per_client, or for an admin
// max_sessions_per_admin (its default: 4 per online CPU, at least 32).
uint32_t SessionsPerClient(const Limits& limits, bool admin);

}  // namespace pathprof::daemon
