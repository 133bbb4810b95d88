// Helpers of the flag-effect tests (flag_effects_test.cc for pathctl, pathprofd_flags_test.cc
// for pathprofd and pathtop): commands run, JSON read, flags read from help texts, and the
// daemon, session and recordings the cases run against, made once per test process.
#pragma once

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "common/run_command.h"
#include "common/run_report.h"
#include "daemon/daemon_harness.h"
#include "pathprof/core/procfs.h"

namespace flag_effects {

namespace fs = std::filesystem;
using pathprof::daemon::testing::Daemon;
using pathprof::daemon::testing::HotLoop;

inline const std::string kBin = PATHPROF_BIN_DIR;

struct R {
  int rc = -1;
  std::string out, err;
  std::string all() const { return out + err; }
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command: stdout and stderr apart (JSON is stdout's alone).
inline R Shell(const std::string& cmd) {
  char path[] = "/tmp/every-flag-err-XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  const auto c = pathprof::testing::RunCommand(cmd + " 2>" + path);
  R r{c.rc, c.out, ReadFile(path)};
  unlink(path);
  return r;
}
inline R Ctl(const std::string& args) {
  return Shell(kBin + "/pathctl " + args);
}
inline std::string Show(const std::string& what, const R& r) {
  return what + "\nrc " + std::to_string(r.rc) + "\nstdout: " + r.out.substr(0, 3000) +
         "\nstderr: " + r.err.substr(0, 3000);
}
inline bool Has(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}
inline size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// ---------------------------------------------------------------- JSON

// Whether `s` is one JSON object, or one per line for streams (watch). Every --json is
// protobuf's JSON mapping of a message, so protobuf's own parser checks it (into a Struct,
// which takes any object): strict RFC 8259, no hand-written parser to trust.
inline bool ValidJson(const std::string& s, bool lines = false) {
  if (s.empty()) return false;
  std::vector<std::string> documents;
  if (lines) {
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) documents.push_back(line);
  } else {
    documents.push_back(s);
  }
  for (const std::string& d : documents) {
    google::protobuf::Struct parsed;
    if (!google::protobuf::util::JsonStringToMessage(d, &parsed).ok()) return false;
  }
  return !documents.empty();
}

// Every numeric value of "key" in `json`, in order. A quoted number counts too: the daemon's
// JSON (proto3 mapping) writes 64-bit integers such as tree node ids as strings ("id":"12").
inline std::vector<double> Nums(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::string needle = "\"" + key + "\":";
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    const char* p = json.c_str() + at + needle.size();
    if (*p == '"') ++p;
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end != p) out.push_back(v);
  }
  return out;
}
inline double Num(const std::string& json, const std::string& key) {
  auto v = Nums(json, key);
  return v.empty() ? -1 : v[0];
}
// Every string value of "key".
inline std::vector<std::string> Strs(const std::string& json, const std::string& key) {
  std::vector<std::string> out;
  const std::string needle = "\"" + key + "\":\"";
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    const size_t b = at + needle.size();
    out.push_back(json.substr(b, json.find('"', b) - b));
  }
  return out;
}
inline std::string Str(const std::string& json, const std::string& key) {
  auto v = Strs(json, key);
  return v.empty() ? "" : v[0];
}
// Milliseconds since the epoch of a Timestamp as the JSON mapping writes it (RFC 3339,
// "2026-11-25T21:04:05.250Z"); -1 if it is not one.
inline double UnixMs(const std::string& rfc3339) {
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(rfc3339, &t)) return -1;
  return static_cast<double>(google::protobuf::util::TimeUtil::TimestampToMilliseconds(t));
}

// ---------------------------------------------------------------- help texts

inline const std::map<std::string, std::string> kShort = {
    {"-o", "output"}, {"-p", "pid"}, {"-F", "freq"}, {"-h", "help"}, {"-V", "version"}};
// Older spellings a help names ("formerly --stack-hz"): the same flag as the canonical one, whose
// case also runs the older spelling where it matters (pathctl's LongAliases()).
inline const std::map<std::string, std::string> kAliases = {{"stack-hz", "freq"},
                                                            {"bursts-per-second", "burst-rate"},
                                                            {"rate", "burst-rate"},
                                                            {"osp-memory", "osp-entries"}};

// The flags a help text names: every `--name`, and the long flag of each short option that starts
// an option line or follows a bracket ("  -o, --output", "[-p PID]"). Prose such as "perf script
// -F" in the middle of a sentence is not an option of ours.
inline std::vector<std::string> FlagsIn(const std::string& help) {
  std::vector<std::string> out;
  auto add = [&](std::string f) {
    if (auto a = kAliases.find(f); a != kAliases.end()) f = a->second;
    if (f != "help" && f != "version" && std::find(out.begin(), out.end(), f) == out.end())
      out.push_back(f);
  };
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] != '-') continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(help[i - 1])) || help[i - 1] == '-'))
      continue;
    if (i + 1 < help.size() && help[i + 1] == '-') {
      size_t k = i + 2;
      while (k < help.size() &&
             (std::islower(static_cast<unsigned char>(help[k])) ||
              std::isdigit(static_cast<unsigned char>(help[k])) || (k > i + 2 && help[k] == '-')))
        ++k;
      if (k > i + 2 && std::islower(static_cast<unsigned char>(help[i + 2])))
        add(help.substr(i + 2, k - i - 2));
      i = k;
      continue;
    }
    size_t before = i;
    while (before > 0 && help[before - 1] == ' ') --before;
    const bool starts = before == 0 || help[before - 1] == '\n' ||
                        (before == i && (help[i - 1] == '[' || help[i - 1] == '('));
    const bool alone = i + 2 >= help.size() || help[i + 2] == ' ' || help[i + 2] == ',' ||
                       help[i + 2] == ']' || help[i + 2] == '\n';
    auto it = kShort.find(help.substr(i, 2));
    if (starts && alone && it != kShort.end()) add(it->second);
  }
  return out;
}

// The commands `pathctl --help` lists.
inline std::vector<std::string> Commands() {
  const R r = Ctl("--help");
  std::vector<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  const std::regex row("^  ([a-z]+) +\\S.*");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, row)) out.push_back(m[1]);
    if (!out.empty() && line.empty()) break;
  }
  return out;
}

// ---------------------------------------------------------------- the environment

// Made on first use and shared by the cases of one test process: a temp dir, a daemon with a
// session on example_hotloop, an exact trace, a socket that accepts and never answers.
struct Env {
  std::string dir;
  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<HotLoop> loop;
  std::string session, pbs, hung;
  int hung_fd = -1;
  ~Env() {
    daemon.reset();
    loop.reset();
    if (hung_fd >= 0) close(hung_fd);
    if (!dir.empty()) fs::remove_all(dir);
  }
};
inline Env& E() {
  static Env env;
  if (env.dir.empty()) {
    char tmpl[] = "/tmp/every-flag-XXXXXX";
    env.dir = mkdtemp(tmpl);
    chmod(env.dir.c_str(), 0755);
  }
  return env;
}

// A cheap session that still collects something: no branch source, stacks at 1 Hz. (With -F 0
// as well the daemon refuses it: "nothing to collect".)
inline const std::string kCheap = " --source none -F 1";

inline std::string Loop() {
  if (!E().loop) E().loop = std::make_unique<HotLoop>();
  return std::to_string(E().loop->pid());
}

// Limits roomy enough for the sessions the cases start.
constexpr const char* kDaemonConfig =
    "[limits]\nmax_sessions_per_client = 400\nmax_sessions = 800\n"
    "max_memory_bytes = 1099511627776\nmax_session_memory_bytes = 1099511627776\n";

// Polls `args` until `done(result)` or 60 s.
inline R PollCtl(const std::string& args, const std::function<bool(const R&)>& done) {
  R r;
  for (int i = 0; i < 300; ++i) {
    r = Ctl(args);
    if (done(r)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return r;
}

// The command whose cases this process runs (each is its own test, and CTest runs each in its
// own process): D() waits only for the profile that command's cases compare.
inline std::string& CurrentCommand() {
  static std::string cmd;
  return cmd;
}

inline Daemon& D() {
  Env& e = E();
  if (!e.daemon) {
    e.daemon = std::make_unique<Daemon>(kDaemonConfig);
    EXPECT_TRUE(e.daemon->Ready()) << e.daemon->Log();
    const R r = Ctl("start -p " + Loop() + " --socket " + e.daemon->socket());
    EXPECT_EQ(r.rc, 0) << Show("start", r);
    e.session = r.out.substr(0, r.out.find('\n'));
    // Enough of the profile the command's cases read, for those that compare a --top 1 with
    // the default: several paths, call pairs, methods, subpaths or tree nodes. (Waiting for
    // all of them in every process took most of the file's run time.)
    const std::string s = " " + e.session + " --json --socket " + e.daemon->socket();
    const std::string& cmd = CurrentCommand();
    const bool all = cmd.empty();
    if (all || cmd == "paths" || cmd == "watch" || cmd == "residual" || cmd == "export")
      PollCtl("paths" + s, [](const R& x) { return Count(x.out, "\"outcomes\"") >= 3; });
    if (all || cmd == "calls")
      PollCtl("calls" + s, [](const R& x) { return Count(x.out, "\"call_site\"") >= 2; });
    if (all || cmd == "methods")
      PollCtl("methods" + s, [](const R& x) { return Count(x.out, "\"self\":{") >= 2; });
    if (all || cmd == "tree" || cmd == "start")  // start --max-depth compares with S's tree
      PollCtl("tree" + s, [](const R& x) { return Count(x.out, "\"parent_id\"") >= 4; });
    if (all || cmd == "subpaths")
      PollCtl("subpaths" + s, [](const R& x) { return Count(x.out, "\"length\"") >= 3; });
  }
  return *e.daemon;
}
inline std::string Sock() {
  return " --socket " + D().socket();
}
inline std::string S() {
  D();
  return E().session;
}
// A fresh, cheap session on the loop (no branch source, stacks at 1 Hz), for stop and rm.
inline std::string NewSession() {
  const R r = Ctl("start -p " + Loop() + kCheap + Sock());
  EXPECT_EQ(r.rc, 0) << Show("start", r);
  return r.out.substr(0, r.out.find('\n'));
}

inline std::string Pbs() {
  Env& e = E();
  if (e.pbs.empty()) {
    e.pbs = e.dir + "/loop.pbs";
    const R r = Ctl("trace --exact -o " + e.pbs + " -- " + kBin + "/example_loop_static 3000");
    EXPECT_EQ(r.rc, 0) << Show("trace", r);
  }
  return e.pbs;
}

// A Unix socket that accepts connections (the backlog) and never answers: a wedged daemon.
inline std::string Hung() {
  Env& e = E();
  if (e.hung.empty()) {
    e.hung = e.dir + "/hung.sock";
    e.hung_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, e.hung.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(bind(e.hung_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(e.hung_fd, 64), 0);
  }
  return e.hung;
}

inline std::string Tmp(const std::string& name) {
  return E().dir + "/" + name;
}

// ---------------------------------------------------------------- the cases

using Check = std::function<void()>;
// "command --flag" -> its case.
using Table = std::map<std::string, Check>;

// Flags whose effect no test here can see, with the reason; they are still checked to be
// accepted (a valid value is not a usage error). Keep this list short and honest.
struct Gap {
  std::string args;  // a valid command line using the flag
  std::string why;
};

inline void ExpectRows(const std::string& what, const R& limited, const R& full,
                       const std::string& row_key, size_t k) {
  EXPECT_TRUE(limited.rc == 0 || limited.rc == 3) << Show(what, limited);
  EXPECT_LE(Count(limited.out, row_key), k) << Show(what, limited);
  EXPECT_GT(Count(full.out, row_key), k) << Show(what +
                                                     " (without the limit: not enough rows "
                                                     "to show the limit)",
                                                 full);
}

// --socket/--address/--tls-*/--timeout/--json of a daemon command; `valid` gives a command line
// (without --socket) that succeeds against the test daemon.
inline void AddClientCases(Table& t, const std::string& cmd, std::function<std::string()> valid) {
  t[cmd + " --socket"] = [=] {
    const R ok = Ctl(valid() + Sock());
    EXPECT_TRUE(ok.rc == 0 || ok.rc == 3) << Show(cmd + " against the test daemon", ok);
    const R missing = Ctl(valid() + " --socket /nonexistent/every-flag.sock");
    EXPECT_EQ(missing.rc, 4) << Show(cmd, missing);
    EXPECT_TRUE(Has(missing.err, "/nonexistent/every-flag.sock")) << Show(cmd, missing);
  };
  t[cmd + " --address"] = [=] {
    const R r = Ctl(valid() + " --address 127.0.0.1:9 --timeout 5s");
    EXPECT_EQ(r.rc, 4) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, "127.0.0.1:9")) << Show(cmd, r);
  };
  t[cmd + " --tls-ca"] = [=] {
    const R r = Ctl(valid() + " --address 127.0.0.1:9 --tls-ca /nonexistent/ca.pem");
    EXPECT_EQ(r.rc, 2) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, "--tls-ca: cannot read /nonexistent/ca.pem")) << Show(cmd, r);
    const R unix_socket = Ctl(valid() + " --tls-ca /nonexistent/ca.pem" + Sock());
    EXPECT_EQ(unix_socket.rc, 2) << Show(cmd, unix_socket);
    EXPECT_TRUE(Has(unix_socket.err, "--tls-ca goes with --address")) << Show(cmd, unix_socket);
  };
  t[cmd + " --tls-cert"] = [=] {
    const R r = Ctl(valid() +
                    " --address 127.0.0.1:9 --tls-cert /nonexistent/c.pem --tls-key /etc/hostname");
    EXPECT_EQ(r.rc, 2) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, "--tls-cert: cannot read /nonexistent/c.pem")) << Show(cmd, r);
  };
  t[cmd + " --tls-key"] = [=] {
    const R r = Ctl(valid() +
                    " --address 127.0.0.1:9 --tls-cert /etc/hostname --tls-key /nonexistent/k.pem");
    EXPECT_EQ(r.rc, 2) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, "--tls-key: cannot read /nonexistent/k.pem")) << Show(cmd, r);
    const R alone = Ctl(valid() + " --address 127.0.0.1:9 --tls-cert /etc/hostname");
    EXPECT_EQ(alone.rc, 2) << Show(cmd, alone);
    EXPECT_TRUE(Has(alone.err, "--tls-cert and --tls-key go together")) << Show(cmd, alone);
  };
  t[cmd + " --timeout"] = [=] {
    // A socket that accepts and never answers: the call ends at the deadline, exit 8, and the
    // message gives the deadline as parsed (300ms is 0.3 s, not 300 s).
    const R r = Ctl(valid() + " --socket " + Hung() + " --timeout 300ms");
    EXPECT_EQ(r.rc, 8) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, "timed out after 0.3 s")) << Show(cmd, r);
    EXPECT_TRUE(Has(r.err, Hung())) << Show(cmd, r);
    const R bad = Ctl(valid() + Sock() + " --timeout 5parsecs");
    EXPECT_EQ(bad.rc, 2) << Show(cmd, bad);
    EXPECT_TRUE(Has(bad.err, "--timeout expects a duration")) << Show(cmd, bad);
  };
  t[cmd + " --json"] = [=] {
    const R r = Ctl(valid() + " --json" + Sock());
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show(cmd, r);
    EXPECT_TRUE(ValidJson(r.out, cmd == "watch")) << Show(cmd + " --json", r);
  };
}

}  // namespace flag_effects
