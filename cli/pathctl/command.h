// pathctl subcommands. Each lives in its own cmd_<name>.cc and registers itself with
// PATHCTL_COMMAND, so adding a subcommand touches no other file.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pathctl/flags.h"

namespace pathctl {

// Exit codes that mean something to scripts (`pathctl --help` and pathctl(1) list them; keep
// kExitCodeHelp in main.cc in step; ExitCodeFor in client.h maps failures onto them).
enum ExitCode {
  kExitOk = 0,
  kExitError = 1,         // the operation failed (message on stderr)
  kExitUsage = 2,         // bad command line
  kExitNoData = 3,        // ran, but found nothing to report
  kExitUnavailable = 4,   // no daemon on the socket (none there, or nothing listening), or the
                          // TCP address does not answer
  kExitDenied = 5,        // the daemon refused: permission, authentication or a rate/quota limit
  kExitNotFound = 6,      // no such process or session
  kExitSocketDenied = 7,  // the socket is there but this user may not connect to it (group)
  kExitTimeout = 8,       // the daemon did not answer within --timeout
};

struct Command {
  std::string name;
  std::string summary;  // one line for `pathctl help`
  // `pathctl help NAME`: the synopsis and prose; the options section follows, made from
  // `flags` (Usage()).
  std::string usage;
  std::vector<Flag> flags;  // the declarations: Args checks each value against them
  std::function<int(Args&)> run;
};

// The whole text of `pathctl help NAME`: the command's usage, then its options.
std::string Usage(const Command& c);

std::map<std::string, Command>& Registry();

struct Registrar {
  explicit Registrar(Command c) { Registry()[c.name] = std::move(c); }
};

#define PATHCTL_CONCAT2(a, b) a##b
#define PATHCTL_CONCAT(a, b) PATHCTL_CONCAT2(a, b)
#define PATHCTL_COMMAND(...) \
  static ::pathctl::Registrar PATHCTL_CONCAT(pathctl_registrar_, __LINE__)(__VA_ARGS__)

// Prints "pathctl NAME: message" to stderr for the usage problems and returns kExitUsage.
int UsageError(const std::string& name, const std::vector<std::string>& problems);

}  // namespace pathctl
