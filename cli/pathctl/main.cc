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
// is an error rather than a positional, so that `run -F 99` cannot be silently ignored.
const std::map<std::string, std::string>& ShortOptions() {
  static const std::map<std::string, std::string> kShort = {{"-o", "output"}, {"-h", "help"}};
  return kShort;
}

Args::Args(std::vector<std::string> argv, std::vector<std::string> boolean_flags) {
  boolean_flags.push_back("help");  // every command answers --help
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
      auto it = ShortOptions().find(a);
      if (it == ShortOptions().end()) {
        errors_.push_back("unknown option " + a);
        continue;
      }
      spelled_[it->second] = a + " (--" + it->second + ")";
      a = "--" + it->second;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string key = a.substr(2), value;
      auto eq = key.find('=');
      bool boolean =
          std::find(boolean_flags.begin(), boolean_flags.end(), key) != boolean_flags.end();
      if (eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
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
    errors_.push_back("--" + key + " expects an integer in " + range + ", got '" + v + "'");
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
    errors_.push_back("--" + key + " expects a number in " + range + ", got '" + v + "'");
    return fallback;
  }
  return x;
}

std::string Args::Spelling(const std::string& key) const {
  auto it = spelled_.find(key);
  return it == spelled_.end() ? "--" + key : it->second;
}

std::vector<std::string> Args::Problems() const {
  std::vector<std::string> out = errors_;
  for (const auto& [k, v] : values_)
    if (!used_.count(k) && k != "help") out.push_back("unknown option " + Spelling(k));
  for (const std::string& k : missing_value_)
    out.push_back(used_.count(k) ? Spelling(k) + " needs a value"
                                 : "unknown option " + Spelling(k));
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

void PrintHelp() {
  std::printf("pathctl: the pathprof command-line tool\n\nusage: pathctl COMMAND [OPTIONS]\n\n");
  for (const auto& [name, c] : Registry())
    std::printf("  %-10s %s\n", name.c_str(), c.summary.c_str());
  std::printf(
      "\npathctl help COMMAND (or pathctl COMMAND --help) shows a command's options;"
      " pathctl --version its version.\n");
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
  return it->second.run(parsed);
}
