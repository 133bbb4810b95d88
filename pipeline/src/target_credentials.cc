#include "target_credentials.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "pathprof/core/hex.h"

namespace pathprof::pipeline {
namespace {

constexpr const char* kIdNames[4] = {"real", "effective", "saved", "filesystem"};

}  // namespace

Result<TargetCredentials> ReadTargetCredentials(uint32_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream in(dir + "/status");
  if (!in) return Error(ErrorCode::kNotFound, "no process " + std::to_string(pid));
  TargetCredentials c;
  int found = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(
        line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1));
    if (line.rfind("Uid:", 0) == 0) {
      for (uint32_t& u : c.uids) ls >> u;
      found += ls ? 1 : 0;
    } else if (line.rfind("Gid:", 0) == 0) {
      for (uint32_t& g : c.gids) ls >> g;
      found += ls ? 1 : 0;
    } else if (line.rfind("CapEff:", 0) == 0) {
      ls >> std::hex >> c.cap_effective;
      found += ls ? 1 : 0;
    } else if (line.rfind("CapPrm:", 0) == 0) {
      ls >> std::hex >> c.cap_permitted;
      found += ls ? 1 : 0;
    }
  }
  if (found != 4)
    return Error(ErrorCode::kCorrupt, dir + "/status lacks Uid, Gid, CapEff or CapPrm");
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return Error(ErrorCode::kNotFound, "no process " + dir);
  c.proc_owner = st.st_uid;
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
