// Every flag of every pathctl command, from the commands' own declarations (`pathctl help
// --flags COMMAND`: cli/pathctl/flags.h): its usage lists it with its short form and default;
// a value it cannot take (below or above its range, not a number, an unknown word, a value for a
// switch) or no value at all is exit 2 with a message naming the flag as typed and what it
// takes, before the command does anything (no daemon is needed). What each flag does is
// flag_effects_test.cc's.
#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"

namespace {

using R = pathprof::testing::CommandResult;
R Ctl(const std::string& args) {
  return pathprof::testing::RunCommand(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args +
                                       " 2>&1");
}
bool Has(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// One line of the listing: name, short, type, default, low, high, words, unit, v1 field.
struct Declared {
  std::string name, short_form, type, default_value, lo, hi, words, unit, field;
};
std::vector<Declared> Declarations(const std::string& cmd) {
  const R r = Ctl("help --flags " + cmd);
  EXPECT_EQ(r.rc, 0) << r.out;
  std::vector<Declared> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) f.push_back(cell);
    f.resize(9);
    out.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]});
  }
  return out;
}

// The commands `pathctl --help` lists ("  name  summary" rows).
std::vector<std::string> Commands() {
  std::vector<std::string> out;
  std::istringstream in(Ctl("--help").out);
  for (std::string line; std::getline(in, line);)
    if (line.size() > 3 && line.rfind("  ", 0) == 0 &&
        std::islower(static_cast<unsigned char>(line[2])))
      out.push_back(line.substr(2, line.find(' ', 2) - 2));
  return out;
}

// `args` (after the command) is a usage error whose message has `message`.
void Refused(const std::string& cmd, const std::string& args, const std::string& message) {
  const R r = Ctl(cmd + " " + args);
  EXPECT_EQ(r.rc, 2) << cmd << " " << args << "\n" << r.out;
  EXPECT_TRUE(Has(r.out, message)) << cmd << " " << args << ": wanted '" << message << "'\n"
                                   << r.out;
}

class Command : public ::testing::TestWithParam<std::string> {};

TEST_P(Command, UsageListsEveryDeclaredFlagWithItsShortFormAndDefault) {
  const std::string cmd = GetParam();
  const R help = Ctl(cmd + " --help");
  ASSERT_EQ(help.rc, 0) << help.out;
  EXPECT_EQ(help.out.rfind("usage: pathctl " + cmd, 0), 0u) << help.out;
  EXPECT_EQ(Ctl("help " + cmd).out, help.out);
  const std::string options = help.out.substr(help.out.find("\noptions:\n"));
  for (const Declared& d : Declarations(cmd)) {
    const std::string spelled = (d.short_form.empty() ? "" : d.short_form + ", ") + "--" + d.name;
    const size_t at = options.find("\n  " + spelled + (d.type == "bool" ? "" : " "));
    ASSERT_NE(at, std::string::npos) << cmd << " --help lacks " << spelled << "\n" << options;
    // The flag's entry: its line and the lines continuing its help.
    size_t end = options.find("\n  -", at + 1);
    const std::string entry = options.substr(at, end == std::string::npos ? end : end - at);
    if (!d.default_value.empty()) {
      EXPECT_TRUE(Has(entry, "default " + d.default_value)) << cmd << ": " << entry;
    }
    if (d.type == "words") {
      EXPECT_TRUE(Has(entry, d.words)) << cmd << ": " << entry;
    }
  }
}

TEST_P(Command, EveryValueAFlagCannotTakeIsAUsageErrorNamingIt) {
  const std::string cmd = GetParam();
  for (const Declared& d : Declarations(cmd)) {
    SCOPED_TRACE(cmd + " --" + d.name);
    const std::string flag = "--" + d.name;
    if (d.type == "int") {
      const std::string takes = flag + " expects an integer in [" + d.lo + ", " + d.hi + "]";
      Refused(cmd, flag + " " + std::to_string(std::stoll(d.lo) - 1), takes);
      if (d.hi != "9223372036854775807")
        Refused(cmd, flag + " " + std::to_string(std::stoll(d.hi) + 1), takes);
      Refused(cmd, flag + "=12x", takes + ", got '12x'");
      if (!d.short_form.empty())
        Refused(cmd, d.short_form + " -1", d.short_form + " (" + flag + ") expects an integer");
    } else if (d.type == "double") {
      Refused(cmd, flag + " nan", flag + " expects a number in [" + d.lo + ", " + d.hi + "]");
      Refused(cmd, flag + " " + d.hi + "1", flag + " expects a number");
    } else if (d.type == "duration") {
      Refused(cmd, flag + " 5parsecs", flag + " expects a duration such as 500ms, 5s or 2m");
      Refused(cmd, flag + " -1s", "in [" + d.lo + "s, " + d.hi + "s], got '-1s'");
    } else if (d.type == "words") {
      Refused(cmd, flag + " every-flag-bogus", flag + " must be ");
      Refused(cmd, flag + " every-flag-bogus", "not 'every-flag-bogus'");
    } else if (d.type == "bool") {
      Refused(cmd, flag + "=maybe", flag + " takes no value, got 'maybe'");
    }
    if (d.type != "bool") Refused(cmd, flag, flag + " needs a value");
  }
  Refused(cmd, "--every-flag-bogus 1", "unknown option --every-flag-bogus");
  Refused(cmd, "--every-flag-bogus", "unknown option --every-flag-bogus");
  Refused(cmd, "-Z", "unknown option -Z");
}

// An older spelling (cli/pathctl/flags.cc LongAliases) is its flag, named as typed.
TEST_P(Command, OlderSpellingsAreTheirFlags) {
  const std::string cmd = GetParam();
  const std::vector<std::pair<std::string, std::string>> aliases = {
      {"stack-hz", "freq"},
      {"bursts-per-second", "burst-rate"},
      {"rate", "burst-rate"},
      {"osp-memory", "osp-entries"}};
  for (const Declared& d : Declarations(cmd))
    for (const auto& [old, now] : aliases)
      if (now == d.name)
        Refused(cmd, "--" + old + " nan", "--" + old + " (--" + now + ") expects a");
}

INSTANTIATE_TEST_SUITE_P(Pathctl, Command, ::testing::ValuesIn(Commands()),
                         [](const auto& info) { return info.param; });

TEST(EveryFlag, EveryCommandDeclaresItsFlags) {
  const std::vector<std::string> commands = Commands();
  EXPECT_GE(commands.size(), 20u);
  for (const std::string& cmd : commands)
    EXPECT_TRUE(cmd == "version" || !Declarations(cmd).empty()) << cmd;
  EXPECT_EQ(Ctl("help --flags every-flag-bogus").rc, 2);
}

}  // namespace
