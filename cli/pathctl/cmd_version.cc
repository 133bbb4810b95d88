#include <cstdio>

#include "pathctl/command.h"

namespace pathctl {
namespace {

int RunVersion(Args& args) {
  if (auto p = args.Problems(); !p.empty()) return UsageError("version", p);
  std::printf("pathctl %s\n", PATHPROF_VERSION_STRING);
  return kExitOk;
}

PATHCTL_COMMAND(Command{"version", "print the version", "usage: pathctl version", {}, RunVersion});

}  // namespace
}  // namespace pathctl
