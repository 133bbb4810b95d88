#include "pathprof/pipeline/process_match.h"

#include <string_view>

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

// The file's path without the " (deleted)" the kernel appends once it was replaced.
std::string WithoutDeleted(const std::string& path) {
  constexpr std::string_view kDeleted = " (deleted)";
  return path.ends_with(kDeleted) ? path.substr(0, path.size() - kDeleted.size()) : path;
}

}  // namespace

bool ProcessMatch::Matches(const std::string& executable_path,
                           const std::string& cgroup_path) const {
  if (!unit.empty() && !InUnit(cgroup_path, unit)) return false;
  if (!cgroup.empty() && !CgroupWithin(cgroup_path, cgroup)) return false;
  if (!executable.empty() && WithoutDeleted(executable_path) != executable) return false;
  return true;
}

}  // namespace pathprof::pipeline
