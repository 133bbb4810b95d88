#include "session_targets.h"

#include <string>

#include "pathprof/api/grpc_status.h"
#include "pathprof/api/queries.h"
#include "pathprof/daemon/auth.h"
#include "pathprof/daemon/host_processes.h"

namespace pathprof::daemon {
namespace {

using api::InvalidArgument;
using grpc::StatusCode;

grpc::Status NoTarget(std::string message) {
  return api::MakeError(StatusCode::NOT_FOUND, std::move(message),
                        {.reason = v1::TARGET_NOT_FOUND});
}

grpc::Status Named(const Peer& peer, const std::string& name, const std::string& prefix,
                   const Limits& l, std::vector<uint32_t>* pids) {
  const std::string field = prefix + "executable_name";
  if (name.empty()) return InvalidArgument(field + " is empty", field, v1::FIELD_REQUIRED);
  if (name.size() > l.max_name_length)
    return api::AboveLimit((field + " length").c_str(), name.size(), l.max_name_length,
                           "max_name_length");
  size_t others = 0;
  for (const auto& p : ProcessesNamed(name)) {
    if (Authorizer::MaySee(peer, p.uid))
      pids->push_back(p.pid);
    else
      ++others;
  }
  if (pids->empty())
    return NoTarget(
        "no process named " + name +
        (others ? " that you own (" + std::to_string(others) + " belong to other users)" : ""));
  return grpc::Status::OK;
}

grpc::Status InCgroup(const Peer& peer, const v1::SessionTarget& target, const std::string& prefix,
                      const Limits& l, std::vector<uint32_t>* pids) {
  std::string cgroup = target.cgroup();
  if (target.has_systemd_unit()) {
    if (target.systemd_unit().size() > l.max_name_length)
      return api::AboveLimit((prefix + "systemd_unit length").c_str(), target.systemd_unit().size(),
                             l.max_name_length, "max_name_length");
    auto resolved = CgroupOfUnit(target.systemd_unit());
    if (!resolved.ok())
      return api::ToGrpc(resolved.status(),
                         {.reason = resolved.status().code() == ErrorCode::kNotFound
                                        ? v1::TARGET_NOT_FOUND
                                        : v1::ERROR_REASON_UNSPECIFIED});
    cgroup = *resolved;
  }
  if (cgroup.size() > l.max_name_length)
    return api::AboveLimit((prefix + "cgroup length").c_str(), cgroup.size(), l.max_name_length,
                           "max_name_length");
  auto in_cgroup = ProcessesInCgroup(cgroup);
  if (!in_cgroup.ok())
    return api::ToGrpc(in_cgroup.status(),
                       {.reason = in_cgroup.status().code() == ErrorCode::kNotFound
                                      ? v1::TARGET_NOT_FOUND
                                      : v1::ERROR_REASON_UNSPECIFIED});
  for (uint32_t pid : *in_cgroup) {
    grpc::Status s = Authorizer::CheckPid(peer, pid);
    if (s.error_code() == StatusCode::PERMISSION_DENIED)
      return api::MakeError(StatusCode::PERMISSION_DENIED,
                            "cgroup " + cgroup + ": " + s.error_message(),
                            {.reason = v1::TARGET_NOT_PERMITTED});
    if (s.ok()) pids->push_back(pid);
  }
  if (pids->empty()) return NoTarget("cgroup " + cgroup + " has no processes");
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ResolveTargets(const Peer& peer, const v1::SessionTarget& target,
                            const std::string& prefix, const Limits& l,
                            std::vector<uint32_t>* pids) {
  grpc::Status s;
  switch (target.selector_case()) {
    case v1::SessionTarget::kPid:
      // 0 is no process, and a negative pid names a process group to kill(2), not a process.
      if (target.pid() < 1)
        return InvalidArgument(
            prefix + "pid must be in [1, 2147483647], got " + std::to_string(target.pid()),
            prefix + "pid");
      s = Authorizer::CheckPid(peer, target.pid());
      if (s.ok()) pids->push_back(target.pid());
      break;
    case v1::SessionTarget::kExecutableName:
      s = Named(peer, target.executable_name(), prefix, l, pids);
      break;
    case v1::SessionTarget::kCgroup:
    case v1::SessionTarget::kSystemdUnit:
      s = InCgroup(peer, target, prefix, l, pids);
      break;
    case v1::SessionTarget::SELECTOR_NOT_SET:
      return InvalidArgument(
          "no target: set " + prefix + "pid, executable_name, cgroup or systemd_unit",
          prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1), v1::FIELD_REQUIRED);
  }
  if (!s.ok()) return s;
  if (pids->size() > l.max_pids_per_session)
    return api::AboveLimit("matched processes", pids->size(), l.max_pids_per_session,
                           "max_pids_per_session");
  return grpc::Status::OK;
}

}  // namespace pathprof::daemon
