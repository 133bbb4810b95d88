// pathctl subcommands. Each lives in its own cmd_<name>.cc and registers itself with
// PATHCTL_COMMAND, so adding a subcommand touches no other file.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// Command-line arguments after the subcommand name: `--key value`, `--key=value`, boolean
// `--flag`, positionals, and everything after `--` kept verbatim (a command to run). The short
// spellings perf users type are the long flags they stand for: `-o FILE` (--output), `-p PID`
// (--pid), `-F HZ` (--freq), `-h` (--help), `-V` (--version); `-p1234` works too. Any other `-X`
// is a usage error. A few long flags have an older spelling still accepted (LongAliases()).
class Args {
 public:
  // `boolean_flags` lists the flags that take no value.
  Args(std::vector<std::string> argv, std::vector<std::string> boolean_flags);

  // The flags the command's usage text names: one given but not read is then reported as not
  // applying to this use of the command (e.g. sim --sweep --top 3) rather than as unknown.
  void SetDocumented(std::vector<std::string> flags) { documented_ = std::move(flags); }

  bool Has(const std::string& key) const;
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  // Parses an integer/double flag in [lo, hi] (finite for doubles); a malformed or out-of-range
  // value records an error naming the flag and its range, and returns fallback.
  long long GetInt(const std::string& key, long long fallback, long long lo, long long hi);
  double GetDouble(const std::string& key, double fallback, double lo, double hi);
  // Parses a duration in seconds: `500ms`, `5s`, `2m`, `1h`, or a bare number in `bare_unit`
  // seconds (1 for a flag documented in seconds, 0.001 for one documented in milliseconds),
  // checked against [lo, hi] seconds; an error names the flag, the accepted forms and the range.
  double GetDuration(const std::string& key, double fallback, double bare_unit, double lo,
                     double hi);
  // How the user wrote a flag, for messages: "-o (--output)" where the short form was used,
  // "--stack-hz (--freq)" where an older spelling was.
  std::string Spelling(const std::string& key) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after `--`
  // Flags given but never asked for, and malformed values: reported as usage errors.
  std::vector<std::string> Problems() const;
  // A usage problem found while reading the flags (e.g. by Client): reported by Problems().
  void AddProblem(std::string problem) { errors_.push_back(std::move(problem)); }

 private:
  bool Documented(const std::string& key) const;

  std::map<std::string, std::string> values_, spelled_;
  mutable std::map<std::string, bool> used_;
  std::vector<std::string> positional_, rest_, errors_, missing_value_, documented_;
};

// Short options (e.g. "-p" -> "pid") and older long spellings (e.g. "stack-hz" -> "freq").
const std::map<std::string, std::string>& ShortOptions();
const std::map<std::string, std::string>& LongAliases();
// The flags a usage text names: every `--name` in it, and the long flag of every short option it
// lists (`-o`). The help of each command is the list its tests check.
std::vector<std::string> FlagsInUsage(const std::string& usage);

// Ranges that flags share. A pid must fit pid_t and be a process (1 or above); a count that
// travels as a proto uint32 must fit one.
inline constexpr long long kMaxPid = 2147483647;  // pid_t is a 32-bit signed int on Linux
inline constexpr long long kMaxU32 = 4294967295;
inline constexpr long long kMaxI64 = 9223372036854775807;

struct Command {
  std::string name;
  std::string summary;  // one line for `pathctl help`
  std::string usage;    // full text for `pathctl help NAME`
  std::vector<std::string> boolean_flags;
  std::function<int(Args&)> run;
};

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
