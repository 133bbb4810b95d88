#include "target_credentials.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "pathprof/core/hex.h"
#include "pathprof/core/procfs.h"

namespace pathprof::pipeline {
namespace {

constexpr const char* kIdNames[4] = {"real", "effective", "saved", "filesystem"};

}  // namespace

Result<TargetCredentials> ReadTargetCredentials(uint32_t pid) {
  const procfs::Procfs& proc = procfs::Procfs::Host();
  auto status = proc.ReadStatus(static_cast<pid_t>(pid));
  if (!status.ok()) return WithContext(status.status(), "process " + std::to_string(pid));
  if (!status->capabilities_known)
    return Error(ErrorCode::kCorrupt,
                 proc.Path(static_cast<pid_t>(pid), "status") + " lacks CapEff or CapPrm");
  TargetCredentials c;
  std::copy(std::begin(status->uid), std::end(status->uid), c.uids.begin());
  std::copy(std::begin(status->gid), std::end(status->gid), c.gids.begin());
  c.cap_effective = status->cap_effective;
  c.cap_permitted = status->cap_permitted;
  PATHPROF_ASSIGN_OR_RETURN(c.proc_owner, proc.Owner(static_cast<pid_t>(pid)));
  return c;
}

std::string PrivilegeGain(const TargetCredentials& now, const Confinement& who) {
  std::string gained;
  auto add = [&](const std::string& what) { gained += (gained.empty() ? "" : ", ") + what; };
  for (int i = 0; i < 4; ++i)
    if (now.uids[i] != who.uid)
      add(std::string(kIdNames[i]) + " uid " + std::to_string(now.uids[i]) + " (yours is " +
          std::to_string(who.uid) + ")");
  for (int i = 0; i < 4; ++i)
    if (std::find(who.gids.begin(), who.gids.end(), now.gids[i]) == who.gids.end())
      add(std::string(kIdNames[i]) + " gid " + std::to_string(now.gids[i]));
  if (now.cap_effective != 0 || now.cap_permitted != 0)
    add("capabilities " + HexAddress(now.cap_effective | now.cap_permitted));
  // A non-dumpable process's /proc entries belong to root: it asked not to be inspected.
  if (now.proc_owner != who.uid && gained.empty()) add("not dumpable");
  return gained;
}

}  // namespace pathprof::pipeline
