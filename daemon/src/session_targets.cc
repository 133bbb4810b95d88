#include "pathprof/daemon/session_targets.h"

#include <string>

#include "pathprof/api/grpc_status.h"
#include "pathprof/api/queries.h"
#include "pathprof/daemon/auth.h"
#include "pathprof/daemon/procfs.h"

namespace pathprof::daemon {
namespace {

using api::InvalidArgument;
using grpc::StatusCode;

grpc::Status Named(const Peer& peer, const std::string& name, const Limits& l,
                   std::vector<uint32_t>* pids) {
  if (name.empty()) return InvalidArgument("executable_name is empty");
  if (name.size() > l.max_name_length)
    return api::AboveLimit("executable_name length", name.size(), l.max_name_length,
                           "max_name_length");
  size_t others = 0;
  for (const auto& p : ProcessesNamed(name)) {
    if (Authorizer::MaySee(peer, p.uid))
      pids->push_back(p.pid);
    else
      ++others;
  }
  if (pids->empty())
    return grpc::Status(
        StatusCode::NOT_FOUND,
        "no process named " + name +
            (others ? " that you own (" + std::to_string(others) + " belong to other users)" : ""));
  return grpc::Status::OK;
}

grpc::Status InCgroup(const Peer& peer, const v1::StartSessionRequest& req, const Limits& l,
                      std::vector<uint32_t>* pids) {
  std::string cgroup = req.cgroup();
  if (req.has_systemd_unit()) {
    if (req.systemd_unit().size() > l.max_name_length)
      return api::AboveLimit("systemd_unit length", req.systemd_unit().size(), l.max_name_length,
                             "max_name_length");
    auto resolved = CgroupOfUnit(req.systemd_unit());
    if (!resolved.ok()) return api::ToGrpc(resolved.status());
    cgroup = *resolved;
  }
  if (cgroup.size() > l.max_name_length)
    return api::AboveLimit("cgroup length", cgroup.size(), l.max_name_length, "max_name_length");
  auto in_cgroup = ProcessesInCgroup(cgroup);
  if (!in_cgroup.ok()) return api::ToGrpc(in_cgroup.status());
  for (uint32_t pid : *in_cgroup) {
    grpc::Status s = Authorizer::CheckPid(peer, pid);
    if (s.error_code() == StatusCode::PERMISSION_DENIED)
      return grpc::Status(StatusCode::PERMISSION_DENIED,
                          "cgroup " + cgroup + ": " + s.error_message());
    if (s.ok()) pids->push_back(pid);
  }
  if (pids->empty())
    return grpc::Status(StatusCode::NOT_FOUND, "cgroup " + cgroup + " has no processes");
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ResolveTargets(const Peer& peer, const v1::StartSessionRequest& req, const Limits& l,
                            std::vector<uint32_t>* pids) {
  grpc::Status s;
  switch (req.target_case()) {
    case v1::StartSessionRequest::kPid:
      // 0 is no process, and a negative pid names a process group to kill(2), not a process.
      if (req.pid() < 1)
        return InvalidArgument("pid must be in [1, 2147483647], got " + std::to_string(req.pid()),
                               "pid");
      s = Authorizer::CheckPid(peer, req.pid());
      if (s.ok()) pids->push_back(req.pid());
      break;
    case v1::StartSessionRequest::kExecutableName:
      s = Named(peer, req.executable_name(), l, pids);
      break;
    case v1::StartSessionRequest::kCgroup:
    case v1::StartSessionRequest::kSystemdUnit:
      s = InCgroup(peer, req, l, pids);
      break;
    default:
      return InvalidArgument("no target: set pid, executable_name, cgroup or systemd_unit");
  }
  if (!s.ok()) return s;
  if (pids->size() > l.max_pids_per_session)
    return api::AboveLimit("matched processes", pids->size(), l.max_pids_per_session,
                           "max_pids_per_session");
  return grpc::Status::OK;
}

}  // namespace pathprof::daemon
