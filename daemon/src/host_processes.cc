#include "pathprof/daemon/host_processes.h"

#include <filesystem>
#include <sstream>

namespace pathprof::daemon {
namespace {

std::string Basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<ProcessEntry> ListProcesses(procfs::ProcessIdentityCache& cache) {
  std::vector<ProcessEntry> out;
  for (procfs::ProcessIdentity& id : cache.All()) {
    if (id.kernel_thread) continue;
    out.push_back({static_cast<uint32_t>(id.pid), id.uid, std::move(id.comm),
                   std::move(id.executable), std::move(id.cgroup)});
  }
  return out;
}

std::vector<ProcessEntry> ProcessesNamed(const std::string& name,
                                         procfs::ProcessIdentityCache& cache) {
  std::vector<ProcessEntry> out;
  for (auto& p : ListProcesses(cache)) {
    std::string exe = Basename(p.executable);
    if (exe.size() > 10 && exe.compare(exe.size() - 10, 10, " (deleted)") == 0)
      exe.resize(exe.size() - 10);
    if (p.comm == name || exe == name) out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<uint32_t>> ProcessesInCgroup(const std::string& cgroup) {
  if (cgroup.empty() || cgroup[0] != '/' || cgroup.find("..") != std::string::npos)
    return Error(ErrorCode::kInvalidArgument,
                 "cgroup '" + cgroup +
                     "' must be an absolute cgroup v2 path without '..', e.g. "
                     "/system.slice/nginx.service");
  auto text = sysfs::Sysfs::Host().Read("fs/cgroup" + cgroup + "/cgroup.procs");
  if (!text.ok())
    return Error(ErrorCode::kNotFound,
                 "no cgroup " + cgroup + " (" + text.status().message() + ")");
  std::vector<uint32_t> pids;
  std::istringstream in(*text);
  uint32_t pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

Result<std::string> CgroupOfUnit(const std::string& unit, const std::string& cgroup_root) {
  const bool valid = !unit.empty() && unit.size() <= 256 && unit[0] != '.' &&
                     unit.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@\\-") ==
                         std::string::npos;
  if (!valid)
    return Error(ErrorCode::kInvalidArgument,
                 "'" + unit + "' is not a systemd unit name (e.g. nginx or nginx.service)");
  const std::string name = unit.find('.') == std::string::npos ? unit + ".service" : unit;
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(cgroup_root, fs::directory_options::skip_permission_denied,
                                      ec);
  // Bounded: a host has thousands of cgroups, not millions.
  for (int visited = 0; !ec && it != fs::recursive_directory_iterator() && visited < 200000;
       it.increment(ec), ++visited) {
    if (it.depth() > 8) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec) || it->path().filename() != name) continue;
    found.push_back("/" + it->path().lexically_relative(cgroup_root).string());
    it.disable_recursion_pending();
  }
  if (found.empty())
    return Error(ErrorCode::kNotFound, "no cgroup for systemd unit " + name + " under " +
                                           cgroup_root + " (is the unit running?)");
  for (const std::string& path : found)
    if (path.starts_with("/system.slice/")) return path;
  if (found.size() == 1) return found.front();
  return Error(ErrorCode::kInvalidArgument,
               "systemd unit " + name + " is in " + std::to_string(found.size()) + " cgroups (" +
                   found[0] + ", " + found[1] + ", ...): give the cgroup path instead");
}

}  // namespace pathprof::daemon
