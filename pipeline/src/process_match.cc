#include "pathprof/pipeline/process_match.h"

namespace pathprof::pipeline {
namespace {

std::string LastComponent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool CgroupWithin(const std::string& cgroup, const std::string& prefix) {
  if (prefix == "/") return true;
  return cgroup == prefix || cgroup.starts_with(prefix + "/");
}

bool InUnit(const std::string& cgroup, const std::string& unit) {
  // A unit's processes sit in .../<unit> or, with delegated sub-groups, .../<unit>/...
  return cgroup.size() >= unit.size() + 1 &&
         (LastComponent(cgroup) == unit || cgroup.find("/" + unit + "/") != std::string::npos);
}

}  // namespace

std::string ExecutableBasename(const std::string& executable_path) {
  std::string exe = LastComponent(executable_path);
  if (exe.ends_with(" (deleted)")) exe.resize(exe.size() - 10);
  return exe;
}

bool ProcessMatch::Matches(const std::string& comm, const std::string& executable_path,
                           const std::string& cgroup_path) const {
  if (!unit.empty() && !InUnit(cgroup_path, unit)) return false;
  if (!cgroup.empty() && !CgroupWithin(cgroup_path, cgroup)) return false;
  if (!executable.empty() && comm != executable &&
      ExecutableBasename(executable_path) != executable)
    return false;
  return true;
}

}  // namespace pathprof::pipeline
