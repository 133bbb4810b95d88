#include <cstdio>

#include "pathctl/command.h"

namespace pathctl {

std::map<std::string, Command>& Registry() {
  static std::map<std::string, Command> registry;
  return registry;
}

std::string Usage(const Command& c) {
  std::string usage = c.usage;
  while (!usage.empty() && usage.back() == '\n') usage.pop_back();
  return usage + "\n\noptions:\n" + OptionsSection(c.flags) +
         "  -h, --help          this text\n  -V, --version       pathctl's version";
}

int UsageError(const std::string& name, const std::vector<std::string>& problems) {
  for (const auto& p : problems) std::fprintf(stderr, "pathctl %s: %s\n", name.c_str(), p.c_str());
  std::fprintf(stderr, "see: pathctl help %s\n", name.c_str());
  return kExitUsage;
}

namespace {

// The version the build stamped in (CMake's project version and the git commit, when built from
// a checkout).
void PrintVersion() {
  std::printf("pathctl %s\n", PATHPROF_VERSION_STRING);
}

// The exit codes of command.h's ExitCode, for `pathctl --help`. A failure maps to one by its gRPC
// code (ExitCodeFor), whether the daemon or pathctl met it.
constexpr const char* kExitCodeHelp =
    "exit status:\n"
    "  0  success\n"
    "  1  the command failed (the message on stderr says why)\n"
    "  2  usage error: a bad or unknown flag, a value out of its range, an input that cannot be\n"
    "     one (a device)\n"
    "  3  ran, but found nothing to report\n"
    "  4  no daemon on the socket (none there, or nothing listening), or the TCP address does\n"
    "     not answer\n"
    "  5  refused: permission, authentication, or a limit (the daemon's rate or quota, a\n"
    "     stream's size bound)\n"
    "  6  no such process, session or file\n"
    "  7  the socket is there but this user may not connect to it (join its group)\n"
    "  8  the daemon did not answer within --timeout\n";
static_assert(kExitOk == 0 && kExitError == 1 && kExitUsage == 2 && kExitNoData == 3 &&
                  kExitUnavailable == 4 && kExitDenied == 5 && kExitNotFound == 6 &&
                  kExitSocketDenied == 7 && kExitTimeout == 8,
              "kExitCodeHelp lists these values");

void PrintHelp() {
  std::printf("pathctl: the pathprof command-line tool\n\nusage: pathctl COMMAND [OPTIONS]\n\n");
  for (const auto& [name, c] : Registry())
    std::printf("  %-10s %s\n", name.c_str(), c.summary.c_str());
  std::printf(
      "\npathctl help COMMAND (or pathctl COMMAND -h/--help) shows a command's options;"
      " pathctl --version (-V, or COMMAND --version) the version.\n"
      "Short options as perf has them: -p PID (--pid), -o FILE (--output), -F HZ (--freq).\n"
      "Durations take a unit: 500ms, 5s, 2m, 1h (a bare number keeps the unit the flag's help\n"
      "gives).\n\n%s",
      kExitCodeHelp);
}

}  // namespace
}  // namespace pathctl

int main(int argc, char** argv) {
  using namespace pathctl;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    // `pathctl help --flags COMMAND`: the declarations, one tab-separated line a flag.
    const bool listing = args.size() > 2 && args[1] == "--flags";
    if (args.size() > 1 && (args[1] != "--flags" || listing)) {
      const std::string& name = listing ? args[2] : args[1];
      auto it = Registry().find(name);
      if (it == Registry().end()) {
        std::fprintf(stderr, "pathctl: no command '%s'\n", name.c_str());
        return kExitUsage;
      }
      std::printf("%s%s",
                  listing ? FlagListing(it->second.flags).c_str() : Usage(it->second).c_str(),
                  listing ? "" : "\n");
      return kExitOk;
    }
    PrintHelp();
    return args.empty() || args.size() > 1 ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    PrintVersion();
    return kExitOk;
  }
  auto it = Registry().find(args[0]);
  if (it == Registry().end()) {
    std::fprintf(stderr, "pathctl: no command '%s' (pathctl help lists them)\n", args[0].c_str());
    return kExitUsage;
  }
  Args parsed(std::vector<std::string>(args.begin() + 1, args.end()), it->second.flags);
  if (parsed.Has("help")) {
    std::printf("%s\n", Usage(it->second).c_str());
    return kExitOk;
  }
  if (parsed.Has("version")) {
    PrintVersion();
    return kExitOk;
  }
  // A value a flag cannot take, or a flag the command does not have: refused before the command
  // does anything.
  if (!parsed.ValueProblems().empty()) return UsageError(args[0], parsed.ValueProblems());
  return it->second.run(parsed);
}
