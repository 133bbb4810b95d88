#include "pathctl/flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pathctl {

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

Flag Flag::Short(std::string s) const {
  Flag f = *this;
  f.short_form = std::move(s);
  return f;
}
Flag Flag::Sets(std::string field, std::string value) const {
  Flag f = *this;
  f.request_field = std::move(field);
  f.request_value = std::move(value);
  return f;
}
Flag Flag::Unit(std::string u) const {
  Flag f = *this;
  f.unit = std::move(u);
  return f;
}
Flag Flag::Accepts(std::function<bool(const std::string&)> parse) const {
  Flag f = *this;
  f.accepts = std::move(parse);
  return f;
}

Flag BoolFlag(std::string name, std::string help) {
  Flag f;
  f.name = std::move(name);
  f.help = std::move(help);
  return f;
}
Flag IntFlag(std::string name, std::string value_name, std::string default_value, long long lo,
             long long hi, std::string help) {
  Flag f = BoolFlag(std::move(name), std::move(help));
  f.type = FlagType::kInt;
  f.value_name = std::move(value_name);
  f.default_value = std::move(default_value);
  f.int_lo = lo;
  f.int_hi = hi;
  return f;
}
Flag DoubleFlag(std::string name, std::string value_name, std::string default_value, double lo,
                double hi, std::string help) {
  Flag f = BoolFlag(std::move(name), std::move(help));
  f.type = FlagType::kDouble;
  f.value_name = std::move(value_name);
  f.default_value = std::move(default_value);
  f.lo = lo;
  f.hi = hi;
  return f;
}
Flag DurationFlag(std::string name, std::string default_value, double bare_unit, double lo,
                  double hi, std::string help) {
  Flag f = BoolFlag(std::move(name), std::move(help));
  f.type = FlagType::kDuration;
  f.value_name = "DUR";
  f.default_value = std::move(default_value);
  f.bare_unit = bare_unit;
  f.lo = lo;
  f.hi = hi;
  return f;
}
Flag StringFlag(std::string name, std::string value_name, std::string default_value,
                std::string help) {
  Flag f = BoolFlag(std::move(name), std::move(help));
  f.type = FlagType::kString;
  f.value_name = std::move(value_name);
  f.default_value = std::move(default_value);
  return f;
}
Flag WordsFlag(std::string name, std::vector<std::string> words, std::string default_value,
               std::string help) {
  Flag f = BoolFlag(std::move(name), std::move(help));
  f.type = FlagType::kWords;
  f.words = std::move(words);
  f.default_value = std::move(default_value);
  return f;
}

std::vector<Flag> Concat(std::vector<Flag> a, const std::vector<Flag>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const char* FlagTypeName(FlagType t) {
  switch (t) {
    case FlagType::kBool:
      return "bool";
    case FlagType::kInt:
      return "int";
    case FlagType::kDouble:
      return "double";
    case FlagType::kDuration:
      return "duration";
    case FlagType::kString:
      return "string";
    case FlagType::kWords:
      return "words";
  }
  return "?";
}

namespace {

std::string Join(const std::vector<std::string>& words, const std::string& sep,
                 const std::string& last_sep) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? last_sep : sep) + words[i];
  return out;
}

std::string G(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "[1, 1000]", "[0, 0.5]", "[0.01s, 3600s]": the range the messages and the listing give.
std::string Range(const Flag& f) {
  switch (f.type) {
    case FlagType::kInt:
      return "[" + std::to_string(f.int_lo) + ", " + std::to_string(f.int_hi) + "]";
    case FlagType::kDouble:
      return "[" + G(f.lo) + ", " + G(f.hi) + "]";
    case FlagType::kDuration:
      return "[" + G(f.lo) + "s, " + G(f.hi) + "s]";
    default:
      return "";
  }
}

std::string LeftColumn(const Flag& f) {
  std::string left = "  ";
  if (!f.short_form.empty()) left += f.short_form + ", ";
  left += "--" + f.name;
  if (f.type == FlagType::kWords)
    left += " " + Join(f.words, "|", "|");
  else if (f.type != FlagType::kBool)
    left += " " + f.value_name;
  return left;
}

// Joins words the wrapping below keeps on one line ("default 10000000").
const std::string kKeep = "\x01";

std::string HelpColumn(const Flag& f) {
  std::string help = f.help;
  std::vector<std::string> notes;
  if (!f.default_value.empty())
    notes.push_back("default" + kKeep + f.default_value + (f.unit.empty() ? "" : kKeep + f.unit));
  if (f.type == FlagType::kInt && f.int_hi < kMaxI64)
    notes.push_back(std::to_string(f.int_lo) + " to " + std::to_string(f.int_hi));
  if (f.type == FlagType::kDuration)
    notes.push_back(f.bare_unit == 1 ? "a bare number is seconds"
                                     : "a bare number is milliseconds");
  if (!notes.empty()) help += " (" + Join(notes, "; ", "; ") + ")";
  return help;
}

}  // namespace

std::string OptionsSection(const std::vector<Flag>& flags) {
  constexpr size_t kHelpColumn = 22, kWidth = 100;
  std::string out;
  for (const Flag& f : flags) {
    std::string line = LeftColumn(f);
    if (line.size() + 1 > kHelpColumn) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kHelpColumn, ' ');
    // Words wrap at kWidth, continuing under the help column.
    std::string word;
    const std::string help = HelpColumn(f) + " ";
    for (char c : help) {
      if (c != ' ') {
        word += c;
        continue;
      }
      if (line.size() + word.size() > kWidth && line.size() > kHelpColumn) {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
        line = std::string(kHelpColumn, ' ');
      }
      line += word + " ";
      word.clear();
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  std::replace(out.begin(), out.end(), kKeep[0], ' ');
  return out;
}

std::string FlagListing(const std::vector<Flag>& flags) {
  std::string out;
  for (const Flag& f : flags) {
    std::string lo, hi;
    if (f.type == FlagType::kInt) {
      lo = std::to_string(f.int_lo);
      hi = std::to_string(f.int_hi);
    } else if (f.type == FlagType::kDouble || f.type == FlagType::kDuration) {
      lo = G(f.lo);
      hi = G(f.hi);
    }
    out += f.name + "\t" + f.short_form + "\t" + FlagTypeName(f.type) + "\t" + f.default_value +
           "\t" + lo + "\t" + hi + "\t" + Join(f.words, "|", "|") + "\t" + f.unit + "\t" +
           f.request_field + (f.request_value.empty() ? "" : "=" + f.request_value) + "\n";
  }
  return out;
}

Args::Args(std::vector<std::string> argv, std::vector<Flag> flags) : flags_(std::move(flags)) {
  // Every command answers --help and --version.
  flags_.push_back(BoolFlag("help", "this text").Short("-h"));
  flags_.push_back(BoolFlag("version", "pathctl's version").Short("-V"));
  std::vector<std::pair<std::string, std::string>> given;  // key, value, to check once spelled
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
      const std::string s = a.substr(0, 2);
      const auto declared = std::find_if(flags_.begin(), flags_.end(),
                                         [&](const Flag& f) { return f.short_form == s; });
      if (declared == flags_.end()) {
        // One pathctl has elsewhere is named with its long flag: "-p (--pid)".
        auto known = ShortOptions().find(s);
        errors_.push_back("unknown option " + s +
                          (known != ShortOptions().end() ? " (--" + known->second + ")" : ""));
        if (known != ShortOptions().end() && a.size() == 2 && i + 1 < argv.size() &&
            argv[i + 1].compare(0, 1, "-") != 0 && known->second != "help" &&
            known->second != "version")
          ++i;  // its value goes with it, not into the positionals
        continue;
      }
      spelled_[declared->name] = s + " (--" + declared->name + ")";
      // `-p1234`, `-F99`, `-oFILE`: the value attached, as getopt allows.
      a = "--" + declared->name + (a.size() > 2 ? "=" + a.substr(2) : "");
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
      const Flag* f = Find(key);
      const bool boolean = f != nullptr && f->type == FlagType::kBool;
      if (has_value) {
        // `--key=value`: the value is already split off.
      } else if (boolean) {
        value = "true";
      } else if (i + 1 < argv.size() && argv[i + 1].compare(0, 2, "--") != 0) {
        // A following "--flag" (or "--") is never taken as a value: `--bogus --top 5` reports
        // --bogus instead of swallowing --top.
        value = argv[++i];
      } else if (f != nullptr) {
        errors_.push_back(Spelling(key) + " needs a value");
        continue;
      }
      if (f == nullptr) {
        errors_.push_back("unknown option " + Spelling(key));
        continue;
      }
      values_[key] = value;
      given.emplace_back(key, value);
    } else {
      positional_.push_back(a);
    }
  }
  for (const auto& [key, value] : given) Check(*Find(key), value);
}

const Flag* Args::Find(const std::string& key) const {
  for (const Flag& f : flags_)
    if (f.name == key) return &f;
  return nullptr;
}

// Checks `value` against the declaration; a problem names the flag as typed and what it takes.
void Args::Check(const Flag& f, const std::string& v) {
  const std::string& key = f.name;
  switch (f.type) {
    case FlagType::kBool:
      if (v != "true" && v != "false")
        errors_.push_back(Spelling(key) + " takes no value, got '" + v + "'");
      return;
    case FlagType::kString:
      return;
    case FlagType::kWords: {
      const bool ok =
          f.accepts ? f.accepts(v) : std::find(f.words.begin(), f.words.end(), v) != f.words.end();
      if (!ok)
        errors_.push_back(Spelling(key) + " must be " + Join(f.words, ", ", " or ") + ", not '" +
                          v + "'");
      return;
    }
    case FlagType::kInt: {
      // strtoll alone would let "4294967297" wrap in a later cast and "-1" become 2^32 - 1: the
      // value is checked against the flag's own range here, in 64 bits, before anyone narrows it.
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || errno == ERANGE || x < f.int_lo || x > f.int_hi) {
        errors_.push_back(Spelling(key) + " expects an integer in " + Range(f) + ", got '" + v +
                          "'");
        return;
      }
      ints_[key] = x;
      return;
    }
    case FlagType::kDouble: {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      // The negated comparisons also reject NaN, which compares false with everything.
      if (v.empty() || *end || !std::isfinite(x) || !(x >= f.lo) || !(x <= f.hi)) {
        errors_.push_back(Spelling(key) + " expects a number in " + Range(f) + ", got '" + v + "'");
        return;
      }
      numbers_[key] = x;
      return;
    }
    case FlagType::kDuration: {
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      const std::string unit = end != nullptr ? std::string(end) : "";
      const std::map<std::string, double> kScale = {
          {"", f.bare_unit}, {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}};
      const auto scale = kScale.find(unit);
      const bool hex = v.find_first_of("xX") != std::string::npos;  // strtod reads 0x10
      if (scale != kScale.end()) x *= scale->second;
      if (v.empty() || end == v.c_str() || hex || scale == kScale.end() || !std::isfinite(x) ||
          !(x >= f.lo) || !(x <= f.hi)) {
        errors_.push_back(Spelling(key) +
                          " expects a duration such as 500ms, 5s or 2m (a bare number " +
                          (f.bare_unit == 1 ? "is seconds" : "is milliseconds") + ") in " +
                          Range(f) + ", got '" + v + "'");
        return;
      }
      numbers_[key] = x;
      return;
    }
  }
}

bool Args::Has(const std::string& key) const {
  used_[key] = true;
  return values_.count(key) > 0;
}

std::string Args::Get(const std::string& key, const std::string& fallback) const {
  used_[key] = true;
  if (auto it = values_.find(key); it != values_.end()) return it->second;
  const Flag* f = Find(key);
  return f != nullptr && !f->default_value.empty() ? f->default_value : fallback;
}

long long Args::Int(const std::string& key) const {
  used_[key] = true;
  if (auto it = ints_.find(key); it != ints_.end()) return it->second;
  const Flag* f = Find(key);
  return f != nullptr && !f->default_value.empty() ? std::atoll(f->default_value.c_str()) : 0;
}

double Args::Double(const std::string& key) const {
  used_[key] = true;
  if (auto it = numbers_.find(key); it != numbers_.end()) return it->second;
  const Flag* f = Find(key);
  return f != nullptr && !f->default_value.empty() ? std::atof(f->default_value.c_str()) : 0;
}

double Args::Seconds(const std::string& key) const {
  used_[key] = true;
  if (auto it = numbers_.find(key); it != numbers_.end()) return it->second;
  const Flag* f = Find(key);
  if (f == nullptr || f->default_value.empty()) return 0;
  // A declared default is written as a user would write it ("1s", "10s").
  Args parsed({"--" + key, f->default_value}, {*f});
  return parsed.numbers_.count(key) ? parsed.numbers_.at(key) : 0;
}

std::string Args::Spelling(const std::string& key) const {
  auto it = spelled_.find(key);
  return it == spelled_.end() ? "--" + key : it->second;
}

std::vector<std::string> Args::Problems() const {
  std::vector<std::string> out = errors_;
  // A declared flag this use of the command did not read: not silently ignored.
  for (const auto& [k, v] : values_)
    if (!used_.count(k) && k != "help" && k != "version")
      out.push_back(Spelling(k) + " does not apply with the other options given");
  return out;
}

}  // namespace pathctl
