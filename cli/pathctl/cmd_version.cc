#include <cstdio>

#include "pathctl/command.h"

namespace pathctl {
namespace {

int RunVersion(Args& args) {
  if (auto p = args.Problems(); !p.empty()) return UsageError("version", p);
  std::printf("pathctl 0.1.0\n");
  return kExitOk;
}

PATHCTL_COMMAND(Command{"version", "print the version", "usage: pathctl version", {}, RunVersion});

}  // namespace
}  // namespace pathctl
