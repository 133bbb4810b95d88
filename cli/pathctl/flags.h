// pathctl's flags as data. Each command declares its flags (name, short form, type, default,
// range, unit, help line, the v1 field it sets); from the declarations come the usage text's
// options section, the checks of every value (Args), `pathctl help --flags COMMAND` (one line a
// flag, for scripts and tests/cli/every_flag_test.cc) and the every-flag test itself.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pathctl {

enum class FlagType {
  kBool,      // --flag, no value
  kInt,       // an integer in [int_lo, int_hi]
  kDouble,    // a finite number in [lo, hi]
  kDuration,  // 500ms, 5s, 2m, 1h, or a bare number in `bare_unit` seconds; in [lo, hi] seconds
  kString,    // any text (a path, a name)
  kWords,     // one of `words`
};

struct Flag {
  std::string name;        // the long name, without "--"
  std::string short_form;  // "-p", or empty (ShortOptions() lists the ones pathctl has)
  FlagType type = FlagType::kBool;
  std::string value_name;     // the usage's placeholder: PID, N, DUR
  std::string default_value;  // as a user would type it; empty: none (the help says what then)
  long long int_lo = 0, int_hi = 0;  // kInt
  double lo = 0, hi = 0;             // kDouble, kDuration (seconds)
  double bare_unit = 1;              // kDuration: 1 (seconds) or 0.001 (milliseconds)
  std::string unit;                  // shown after the default: "Hz", "MiB"
  std::vector<std::string> words;    // kWords, in the order the usage lists them
  // kWords: the command's own parser of a word, where it has one (else: one of `words`).
  std::function<bool(const std::string&)> accepts;
  std::string help;  // one line
  // The v1 request field it sets, if any, from the request's type ("session.settings.sampling.
  // stack_hz"; request_fields.h fills it), and for a bool field the value it sets (empty: true).
  std::string request_field;
  std::string request_value;

  // Declaration helpers, chained on the makers below.
  Flag Short(std::string s) const;
  Flag Sets(std::string field, std::string value = "") const;
  Flag Unit(std::string u) const;
  Flag Accepts(std::function<bool(const std::string&)> parse) const;
};

Flag BoolFlag(std::string name, std::string help);
Flag IntFlag(std::string name, std::string value_name, std::string default_value, long long lo,
             long long hi, std::string help);
Flag DoubleFlag(std::string name, std::string value_name, std::string default_value, double lo,
                double hi, std::string help);
// `bare_unit`: what a number without a unit means, 1 (seconds) or 0.001 (milliseconds).
Flag DurationFlag(std::string name, std::string default_value, double bare_unit, double lo,
                  double hi, std::string help);
Flag StringFlag(std::string name, std::string value_name, std::string default_value,
                std::string help);
Flag WordsFlag(std::string name, std::vector<std::string> words, std::string default_value,
               std::string help);

// Two lists of declarations as one (a command's own and the ones it shares).
std::vector<Flag> Concat(std::vector<Flag> a, const std::vector<Flag>& b);

// The usage's options section: one line a flag ("  -p, --pid PID     help (default ...)").
std::string OptionsSection(const std::vector<Flag>& flags);
// `pathctl help --flags COMMAND`: one tab-separated line a flag: name, short form, type, default,
// low, high, words (|-separated), unit, v1 field.
std::string FlagListing(const std::vector<Flag>& flags);
const char* FlagTypeName(FlagType t);

// Short options (e.g. "-p" -> "pid") and older long spellings (e.g. "stack-hz" -> "freq").
const std::map<std::string, std::string>& ShortOptions();
const std::map<std::string, std::string>& LongAliases();

// Command-line arguments after the subcommand name, read against the command's declarations:
// `--key value`, `--key=value`, boolean `--flag`, positionals, and everything after `--` kept
// verbatim (a command to run). A flag's short form (`-p 5`, `-p5`) and its older spelling
// (LongAliases) are the flag. Every value given is checked when read from the command line: a
// malformed or out-of-range one is a problem naming the flag as typed and what it accepts.
class Args {
 public:
  Args(std::vector<std::string> argv, std::vector<Flag> flags);

  // Whether the flag was given (and, for the report of flags left unread, that it was read).
  bool Has(const std::string& key) const;
  // The flag's value as given, else its declared default (else `fallback`).
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  // The value as given (checked against its declaration), else the declared default (0 if none).
  long long Int(const std::string& key) const;
  double Double(const std::string& key) const;
  double Seconds(const std::string& key) const;  // a kDuration flag, in seconds

  // How the user wrote a flag, for messages: "-o (--output)" where the short form was used,
  // "--stack-hz (--freq)" where an older spelling was.
  std::string Spelling(const std::string& key) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after `--`
  // Malformed values and unknown flags, found on reading the command line.
  const std::vector<std::string>& ValueProblems() const { return errors_; }
  // Those, the problems added since, and the declared flags given but never read (they do not
  // apply with the other options given): all reported as usage errors.
  std::vector<std::string> Problems() const;
  // A usage problem found while reading the flags (e.g. by Client): reported by Problems().
  void AddProblem(std::string problem) { errors_.push_back(std::move(problem)); }

 private:
  const Flag* Find(const std::string& key) const;
  void Check(const Flag& f, const std::string& value);

  std::vector<Flag> flags_;
  std::map<std::string, std::string> values_, spelled_;
  std::map<std::string, double> numbers_;  // checked kInt/kDouble/kDuration values
  std::map<std::string, long long> ints_;
  mutable std::map<std::string, bool> used_;
  std::vector<std::string> positional_, rest_, errors_;
};

// Ranges that flags share. A pid must fit pid_t and be a process (1 or above); a count that
// travels as a proto uint32 must fit one.
inline constexpr long long kMaxPid = 2147483647;  // pid_t is a 32-bit signed int on Linux
inline constexpr long long kMaxU32 = 4294967295;
inline constexpr long long kMaxI64 = 9223372036854775807;

}  // namespace pathctl
