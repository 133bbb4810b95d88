#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "pathctl/command.h"

namespace pathctl {

std::map<std::string, Command>& Registry() {
  static std::map<std::string, Command> registry;
  return registry;
}

// The short spellings people type from habit (perf, tar, curl). Any other single-dash option
// is an error rather than a positional, so that `run -x 99` cannot be silently ignored.
const std::map<std::string, std::string>& ShortOptions() {
  static const std::map<std::string, std::string> kShort = {
      {"-o", "output"}, {"-p", "pid"}, {"-F", "freq"}, {"-h", "help"}, {"-V", "version"}};
  return kShort;
}

// Older long spellings of one concept, kept working for scripts: the flag's one name is the
// value. (Stack sampling was --stack-hz; the ptrace burst rate was --bursts-per-second in start
// and --rate in bursts; the OSP reservoir bound was --osp-memory in sim.)
const std::map<std::string, std::string>& LongAliases() {
  static const std::map<std::string, std::string> kAliases = {{"stack-hz", "freq"},
                                                              {"bursts-per-second", "burst-rate"},
                                                              {"rate", "burst-rate"},
                                                              {"osp-memory", "osp-entries"}};
  return kAliases;
}

std::vector<std::string> FlagsInUsage(const std::string& usage) {
  std::vector<std::string> out;
  auto add = [&](std::string f) {
    // An older spelling a usage mentions ("formerly --stack-hz") is its canonical flag, which
    // is the key Args keeps it under: not a flag of its own.
    if (auto alias = LongAliases().find(f); alias != LongAliases().end()) f = alias->second;
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (size_t i = 0; i < usage.size(); ++i) {
    if (usage[i] != '-' ||
        (i > 0 && (std::isalnum(static_cast<unsigned char>(usage[i - 1])) || usage[i - 1] == '-')))
      continue;
    size_t j = i + 1;
    const bool long_flag = j < usage.size() && usage[j] == '-';
    if (long_flag) ++j;
    size_t k = j;
    while (k < usage.size() &&
           (std::islower(static_cast<unsigned char>(usage[k])) ||
            std::isdigit(static_cast<unsigned char>(usage[k])) || (k > j && usage[k] == '-')))
      ++k;
    if (long_flag && k > j && std::islower(static_cast<unsigned char>(usage[j]))) {
      add(usage.substr(j, k - j));
    } else if (!long_flag && j < usage.size()) {
      // A short option: "-o" that starts an option line or follows a bracket ("[-o FILE]"),
      // followed by a space, a comma or a bracket. (Not "perf script -F ...", which is prose.)
      size_t before = i;
      while (before > 0 && usage[before - 1] == ' ') --before;
      const bool starts = before == 0 || usage[before - 1] == '\n' ||
                          (before == i && (usage[i - 1] == '[' || usage[i - 1] == '('));
      const std::string opt = usage.substr(i, 2);
      const bool alone =
          starts && (i + 2 >= usage.size() || usage[i + 2] == ' ' || usage[i + 2] == ',' ||
                     usage[i + 2] == ']' || usage[i + 2] == '\n');
      auto it = ShortOptions().find(opt);
      if (alone && it != ShortOptions().end()) add(it->second);
    }
    i = k;
  }
  return out;
}

Args::Args(std::vector<std::string> argv, std::vector<std::string> boolean_flags) {
  boolean_flags.push_back("help");  // every command answers --help and --version
  boolean_flags.push_back("version");
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a == "--") {
      rest_.assign(argv.begin() + i + 1, argv.end());
      break;
    }
    // A lone "-" is a positional (stdin, by convention); "-5" is a number, not an option.
    const bool short_option = a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
                              !std::isdigit(static_cast<unsigned char>(a[1]));
    if (short_option) {
      auto it = ShortOptions().find(a.substr(0, 2));
      if (it == ShortOptions().end()) {
        errors_.push_back("unknown option " + a);
        continue;
      }
      spelled_[it->second] = a.substr(0, 2) + " (--" + it->second + ")";
      // `-p1234`, `-F99`, `-oFILE`: the value attached, as getopt allows.
      a = "--" + it->second + (a.size() > 2 ? "=" + a.substr(2) : "");
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string key = a.substr(2), value;
      auto eq = key.find('=');
      const bool has_value = eq != std::string::npos;
      if (has_value) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      }
      if (auto alias = LongAliases().find(key); alias != LongAliases().end()) {
        spelled_[alias->second] = "--" + key + " (--" + alias->second + ")";
        key = alias->second;
      }
      const bool boolean =
          std::find(boolean_flags.begin(), boolean_flags.end(), key) != boolean_flags.end();
      if (has_value) {
        // `--key=value`: the value is already split off.
      } else if (boolean) {
        value = "true";
      } else if (i + 1 < argv.size() && argv[i + 1].compare(0, 2, "--") != 0) {
        // A following "--flag" (or "--") is never taken as a value: `--bogus --top 5` reports
        // --bogus instead of swallowing --top.
        value = argv[++i];
      } else {
        // Whether this is "needs a value" or "unknown option" depends on whether the command
        // asks for it: decided in Problems(), after the command has read its flags.
        missing_value_.push_back(key);
        continue;
      }
      values_[key] = value;
    } else {
      positional_.push_back(a);
    }
  }
}

bool Args::Has(const std::string& key) const {
  used_[key] = true;
  return values_.count(key) > 0;
}

std::string Args::Get(const std::string& key, const std::string& fallback) const {
  used_[key] = true;
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

long long Args::GetInt(const std::string& key, long long fallback, long long lo, long long hi) {
  if (!Has(key)) return fallback;
  const std::string& v = values_[key];
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  // strtoll alone would let "4294967297" wrap in a later cast and "-1" become 2^32 - 1: the
  // value is checked against the flag's own range here, in 64 bits, before anyone narrows it.
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE || x < lo || x > hi) {
    errors_.push_back(Spelling(key) + " expects an integer in " + range + ", got '" + v + "'");
    return fallback;
  }
  return x;
}

double Args::GetDouble(const std::string& key, double fallback, double lo, double hi) {
  if (!Has(key)) return fallback;
  const std::string& v = values_[key];
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  // The negated comparisons also reject NaN, which compares false with everything.
  if (v.empty() || *end || !std::isfinite(x) || !(x >= lo) || !(x <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    errors_.push_back(Spelling(key) + " expects a number in " + range + ", got '" + v + "'");
    return fallback;
  }
  return x;
}

double Args::GetDuration(const std::string& key, double fallback, double bare_unit, double lo,
                         double hi) {
  if (!Has(key)) return fallback;
  const std::string& v = values_[key];
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  const std::string unit = end != nullptr ? std::string(end) : "";
  double scale = -1;
  if (unit.empty())
    scale = bare_unit;
  else if (unit == "ms")
    scale = 0.001;
  else if (unit == "s")
    scale = 1;
  else if (unit == "m")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  const bool hex = v.find_first_of("xX") != std::string::npos;  // strtod reads 0x10
  x *= scale;
  if (v.empty() || end == v.c_str() || hex || scale < 0 || !std::isfinite(x) || !(x >= lo) ||
      !(x <= hi)) {
    char range[128];
    std::snprintf(range, sizeof range, "[%gs, %gs]", lo, hi);
    errors_.push_back(Spelling(key) +
                      " expects a duration such as 500ms, 5s or 2m (a bare number " +
                      (bare_unit == 1 ? "is seconds" : "is milliseconds") + ") in " + range +
                      ", got '" + v + "'");
    return fallback;
  }
  return x;
}

std::string Args::Spelling(const std::string& key) const {
  auto it = spelled_.find(key);
  return it == spelled_.end() ? "--" + key : it->second;
}

bool Args::Documented(const std::string& key) const {
  return std::find(documented_.begin(), documented_.end(), key) != documented_.end();
}

std::vector<std::string> Args::Problems() const {
  std::vector<std::string> out = errors_;
  // A flag the usage names but this use of the command did not read: not unknown, but not
  // silently ignored either.
  const auto unread = [&](const std::string& k) {
    return Documented(k) ? Spelling(k) + " does not apply with the other options given"
                         : "unknown option " + Spelling(k);
  };
  for (const auto& [k, v] : values_)
    if (!used_.count(k) && k != "help" && k != "version") out.push_back(unread(k));
  for (const std::string& k : missing_value_)
    out.push_back(used_.count(k) ? Spelling(k) + " needs a value" : unread(k));
  return out;
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
    if (args.size() > 1) {
      auto it = Registry().find(args[1]);
      if (it == Registry().end()) {
        std::fprintf(stderr, "pathctl: no command '%s'\n", args[1].c_str());
        return kExitUsage;
      }
      std::printf("%s\n", it->second.usage.c_str());
      return kExitOk;
    }
    PrintHelp();
    return args.empty() ? kExitUsage : kExitOk;
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
  Args parsed(std::vector<std::string>(args.begin() + 1, args.end()), it->second.boolean_flags);
  if (parsed.Has("help")) {
    std::printf("%s\n", it->second.usage.c_str());
    return kExitOk;
  }
  if (parsed.Has("version")) {
    PrintVersion();
    return kExitOk;
  }
  parsed.SetDocumented(FlagsInUsage(it->second.usage));
  return it->second.run(parsed);
}
