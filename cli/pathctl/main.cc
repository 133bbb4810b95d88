#include <algorithm>
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

Args::Args(std::vector<std::string> argv, std::vector<std::string> boolean_flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      rest_.assign(argv.begin() + i + 1, argv.end());
      break;
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
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        errors_.push_back("--" + key + " needs a value");
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

std::vector<std::string> Args::Problems() const {
  std::vector<std::string> out = errors_;
  for (const auto& [k, v] : values_)
    if (!used_.count(k)) out.push_back("unknown option --" + k);
  return out;
}

int UsageError(const std::string& name, const std::vector<std::string>& problems) {
  for (const auto& p : problems) std::fprintf(stderr, "pathctl %s: %s\n", name.c_str(), p.c_str());
  std::fprintf(stderr, "see: pathctl help %s\n", name.c_str());
  return kExitUsage;
}

namespace {

void PrintHelp() {
  std::printf("pathctl: the pathprof command-line tool\n\nusage: pathctl COMMAND [OPTIONS]\n\n");
  for (const auto& [name, c] : Registry())
    std::printf("  %-10s %s\n", name.c_str(), c.summary.c_str());
  std::printf("\npathctl help COMMAND shows a command's options.\n");
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
  auto it = Registry().find(args[0]);
  if (it == Registry().end()) {
    std::fprintf(stderr, "pathctl: no command '%s' (pathctl help lists them)\n", args[0].c_str());
    return kExitUsage;
  }
  Args parsed(std::vector<std::string>(args.begin() + 1, args.end()), it->second.boolean_flags);
  return it->second.run(parsed);
}
