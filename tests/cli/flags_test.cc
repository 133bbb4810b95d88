// Every number a user types is range-checked before anything narrows it: the exact inputs that
// once started a session on pid 1 (4294967297 wrapped), turned a duration into "no limit"
// (4294967296 became 0), turned negatives into 2^32 - n, and took NaN as a rate. Each must be a
// usage error (exit 2) that names the flag and its range. No daemon is needed: pathctl checks
// before it connects.
#include <gtest/gtest.h>

#include <string>

#include "common/run_command.h"

namespace {

using pathprof::testing::CommandResult;

CommandResult Tool(const std::string& tool, const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/" + tool + " " + args +
                                       " --socket /nonexistent/pathprofd.sock 2>&1");
}

struct Case {
  const char* args;
  const char* message;
};

TEST(Flags, OutOfRangeNumbersAreUsageErrorsNamingTheFlagAndItsRange) {
  const Case cases[] = {
      {"start --pid 4294967297", "--pid expects an integer in [1, 2147483647], got '4294967297'"},
      {"start --pid 0", "--pid expects an integer in [1, 2147483647], got '0'"},
      {"start --pid -1", "--pid expects an integer in [1, 2147483647], got '-1'"},
      {"start --pid 1 --duration 4294967296",
       "--duration expects a duration such as 500ms, 5s or 2m (a bare number is seconds) in "
       "[0s, 4.29497e+09s], got '4294967296'"},
      {"start --pid 1 --duration -5", "--duration expects a duration"},
      {"start --pid 1 --duration 5parsecs", "--duration expects a duration"},
      {"start --pid 1 --duration 0x10", "--duration expects a duration"},
      // An older spelling is named as typed, with the flag's one name.
      {"start --pid 1 --stack-hz -1", "--stack-hz (--freq) expects an integer in [0, 10000]"},
      {"start --pid 1 -F -1", "-F (--freq) expects an integer in [0, 10000]"},
      {"start --pid 1 --bursts-per-second nan",
       "--bursts-per-second (--burst-rate) expects a number in [0, 10000], got 'nan'"},
      {"start --pid 1 --max-stopped inf", "--max-stopped expects a number in [0, 0.5], got 'inf'"},
      {"start --pid 1 --window 99999999999999999999",
       "--window expects an integer in [1, 4096], got '99999999999999999999'"},
      {"paths s-1 --top -3", "--top expects an integer in [1, 1000000], got '-3'"},
      {"tree s-1 --min-weight nan", "--min-weight expects a number in [0, 1e+300], got 'nan'"},
      {"watch s-1 --interval 1", "--interval expects a duration"},
      {"bursts --pid 1 --rate nan",
       "--rate (--burst-rate) expects a number in [0, 10000], got 'nan'"},
      {"bursts --pid 1 --burst-rate -inf",
       "--burst-rate expects a number in [0, 10000], got '-inf'"},
      {"bursts -p1 --duration 1e400", "--duration expects a duration"},
      {"bursts --pid 4294967297", "--pid expects an integer in [1, 2147483647]"},
      {"run --duration 4294967296 -- /bin/true", "--duration expects a duration"},
      {"run --duration 2d -- /bin/true", "--duration expects a duration"},
      {"run --burst-rate nan -- /bin/true", "--burst-rate expects a number in [0, 10000]"},
      {"analyze --pid -1 x.data", "--pid expects an integer in [1, 2147483647], got '-1'"},
      {"sessions --timeout nan",
       "--timeout expects a duration such as 500ms, 5s or 2m (a bare number is seconds) in "
       "[0.001s, 86400s], got 'nan'"},
      {"watch s-1 --interval 5ms",
       "--interval expects a duration such as 500ms, 5s or 2m (a "
       "bare number is milliseconds) in [0.01s, 3600s], got '5ms'"},
      {"start --pid 0x10", "--pid expects an integer in [1, 2147483647], got '0x10'"},
  };
  for (const Case& c : cases) {
    const CommandResult r = Tool("pathctl", c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(Flags, PathtopChecksItsNumbersToo) {
  for (const char* args : {"--pid 4294967297", "--pid nan", "--pid 1.5", "--pid -1"}) {
    const CommandResult r = Tool("pathtop", args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("--pid needs a process id, an integer in [1, 2147483647]"),
              std::string::npos)
        << args << "\n"
        << r.out;
  }
  const CommandResult r = Tool("pathtop", "--interval nan");
  EXPECT_EQ(r.rc, 2) << r.out;
}

// What a new user types from habit: --help after a command, -o, --version, a flag from another
// tool. Each either works or is a usage error that names what was typed; none is ignored.
CommandResult Bare(const std::string& tool, const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/" + tool + " " + args +
                                       " 2>&1");
}

TEST(Flags, HelpAfterACommandPrintsItsUsage) {
  for (const char* args : {"paths --help", "export -h", "run --pid 1 --help", "bursts --help"}) {
    const CommandResult r = Bare("pathctl", args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
    const std::string command = std::string(args).substr(0, std::string(args).find(' '));
    EXPECT_NE(r.out.find("usage: pathctl " + command), std::string::npos) << args << "\n" << r.out;
  }
}

TEST(Flags, EveryToolHasAVersion) {
  for (const char* tool : {"pathctl", "pathtop", "pathprofd"}) {
    const CommandResult r = Bare(tool, "--version");
    EXPECT_EQ(r.rc, 0) << tool << "\n" << r.out;
    EXPECT_EQ(r.out, std::string(tool) + " " + PATHPROF_VERSION_STRING + "\n");
  }
  EXPECT_EQ(Bare("pathctl", "version").out,
            std::string("pathctl ") + PATHPROF_VERSION_STRING + "\n");
}

TEST(Flags, UnknownOrValuelessFlagsAreNamedNeverIgnored) {
  const Case cases[] = {
      // An unknown flag at the end is unknown, not "needs a value".
      {"paths s-1 --bogus", "unknown option --bogus"},
      // ...and does not swallow the flag after it.
      {"paths s-1 --bogus --top 5", "unknown option --bogus"},
      // A known flag without its value.
      {"paths s-1 --top", "--top needs a value"},
      // Short options nobody has, and perf's habits on a command that does not take them.
      {"run -x 99 -- /bin/true", "unknown option -x"},
      {"sessions -o x.pb.gz", "unknown option -o (--output)"},
      {"paths s-1 -p 5", "unknown option -p (--pid)"},
      {"sessions -F 99", "unknown option -F (--freq)"},
      // A flag the command has, but not in this use of it.
      {"sim --sweep --top 3", "--top does not apply with the other options given"},
      {"caps --timeout 5", "--timeout does not apply with the other options given"},
      {"export --format bolt x.pbs -o y --socket /s", "--socket does not apply"},
      {"sessions --tls-ca ca.pem", "--tls-ca goes with --address"},
      {"residual s-1 --baseline b --save --top 3", "--top does not apply"},
      {"start -p 1 --max-descendants 3", "--max-descendants does not apply"},
      {"export s-1", "-o FILE is required"},
  };
  for (const Case& c : cases) {
    const CommandResult r = Bare("pathctl", c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  // -o is --output wherever a command writes a file; the request then fails only for want of a
  // daemon (exit 4), not of a flag.
  const CommandResult r =
      Bare("pathctl", "export s-1 -o /tmp/x.pb.gz --json --socket /nonexistent/s");
  EXPECT_EQ(r.rc, 4) << r.out;
}

TEST(Flags, RunOnAMissingProcessIsNotFound) {
  // pid_max is at most 2^22 on Linux: this pid cannot exist.
  const CommandResult r = Bare("pathctl", "run --source none --pid 2147483000 --duration 1");
  EXPECT_EQ(r.rc, 6) << r.out;
  EXPECT_NE(r.out.find("no process 2147483000"), std::string::npos) << r.out;
}

}  // namespace
