#include "pathprof/daemon/auth.h"

#include <cstdlib>

#include "pathprof/api/grpc_status.h"
#include "pathprof/core/procfs.h"

namespace pathprof::daemon {

std::optional<uint32_t> ProcessOwner(uint32_t pid) {
  if (pid == 0) return std::nullopt;
  auto owner = procfs::Procfs::Host().Owner(static_cast<pid_t>(pid));
  if (!owner.ok()) return std::nullopt;
  return *owner;
}

bool Authorizer::KernelAddressesVisible(const Peer& peer) {
  if (peer.admin) return true;
  // As kallsyms_show_value() decides for a task without CAP_SYSLOG; unreadable means hidden.
  const procfs::Procfs& proc = procfs::Procfs::Host();
  return proc.ReadSysctlInt("sys/kernel/kptr_restrict", 2) == 0 &&
         proc.ReadSysctlInt("sys/kernel/perf_event_paranoid", 2) <= 1;
}

void Authorizer::Configure(const DaemonConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  admin_group_ = config.admin_group;
  identities_ = config.tls_identities;
}

grpc::Status Authorizer::Identify(grpc::ServerContext* context, Peer* out) const {
  std::string peer = context->peer();
  if (peer.rfind("fd:", 0) == 0) {
    char* end = nullptr;
    long fd = std::strtol(peer.c_str() + 3, &end, 10);
    std::optional<Peer> p;
    if (end && *end == '\0' && fd >= 0) p = peers_->Find(static_cast<int>(fd));
    // A call whose connection already closed may find its fd reused by a newer connection;
    // gRPC cancels a connection's calls before it closes the fd, so a live call found a live
    // entry (checked after the lookup, in that order).
    if (!p || context->IsCancelled())
      return api::MakeError(grpc::StatusCode::UNAUTHENTICATED,
                            "connection " + peer + " is not known to pathprofd; reconnect",
                            {.reason = v1::PEER_UNKNOWN});
    std::lock_guard<std::mutex> lock(mu_);
    p->admin = IsAdmin(*p, admin_group_);
    *out = std::move(*p);
    return grpc::Status::OK;
  }
  auto auth = context->auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& value : auth->GetPeerIdentity()) {
      std::string name(value.data(), value.size());
      for (const auto& id : identities_) {
        if (id.name != name) continue;
        out->uid = id.uid;
        out->tls_identity = name;
        out->admin = id.uid == 0;
        return grpc::Status::OK;
      }
    }
    std::string names;
    for (const auto& value : auth->GetPeerIdentity())
      names += (names.empty() ? "" : ", ") + std::string(value.data(), value.size());
    return api::MakeError(grpc::StatusCode::PERMISSION_DENIED,
                          "TLS identity " + names + " is not listed in [[tcp.clients]]",
                          {.reason = v1::TLS_IDENTITY_NOT_LISTED});
  }
  return api::MakeError(
      grpc::StatusCode::UNAUTHENTICATED,
      "peer " + peer + " has no verified identity (TCP needs a client certificate)",
      {.reason = v1::PEER_UNKNOWN});
}

grpc::Status Authorizer::CheckPid(const Peer& peer, uint32_t pid) {
  auto owner = ProcessOwner(pid);
  if (!owner)
    return api::MakeError(grpc::StatusCode::NOT_FOUND, "no process " + std::to_string(pid),
                          {.reason = v1::TARGET_NOT_FOUND});
  if (!MaySee(peer, *owner))
    return api::MakeError(grpc::StatusCode::PERMISSION_DENIED,
                          "pid " + std::to_string(pid) + " belongs to uid " +
                              std::to_string(*owner) + "; you are uid " + std::to_string(peer.uid),
                          {.reason = v1::TARGET_NOT_PERMITTED});
  return grpc::Status::OK;
}

}  // namespace pathprof::daemon
