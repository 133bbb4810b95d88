// Starts the real pathprofd on a temporary socket and runs the real pathctl against it.
#pragma once

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pathprof/core/procfs.h"

namespace pathprof::daemon::testing {

inline const std::string kBin = PATHPROF_BIN_DIR;

struct CmdResult {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

inline CmdResult Sh(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log = "") {
  pid_t pid = fork();
  if (pid == 0) {
    if (!log.empty()) {
      FILE* f = fopen(log.c_str(), "w");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
    }
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

class Daemon {
 public:
  // `config` is written to a file given with --config; `flags` are appended.
  explicit Daemon(const std::string& config = "", std::vector<std::string> flags = {}) {
    char tmpl[] = "/tmp/pathprofd-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    chmod(dir_.c_str(), 0755);  // the non-root test user must reach the socket
    socket_ = dir_ + "/run/pathprofd.sock";
    config_ = dir_ + "/pathprofd.toml";
    WriteConfig(config);
    std::vector<std::string> argv = {kBin + "/pathprofd", "--config", config_, "--socket", socket_,
                                     "--log-level",       "debug"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    pid_ = Spawn(argv, log());
    for (int i = 0; i < 300 && !Ready(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    Sh("rm -rf " + dir_);
  }
  bool Ready() const {
    struct stat st;
    return stat(socket_.c_str(), &st) == 0 && Log().find("serving on") != std::string::npos;
  }
  void WriteConfig(const std::string& text) { std::ofstream(config_) << text; }
  // Sends `sig` and waits (up to 20 s) for the exit; returns the wait status, or -1.
  int Signal(int sig, bool wait = true) {
    kill(pid_, sig);
    if (!wait) return 0;
    for (int i = 0; i < 400; ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return st;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  bool Alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  // `as` is a setpriv prefix (see AsUser) or empty for root.
  CmdResult Ctl(const std::string& args, const std::string& as = "") const {
    return Sh(as + kBin + "/pathctl " + args + " --socket " + socket_);
  }
  std::string Log() const {
    std::ifstream in(log());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string log() const { return dir_ + "/pathprofd.log"; }
  const std::string& socket() const { return socket_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }

 private:
  std::string dir_, socket_, config_;
  pid_t pid_ = -1;
};

// A running example_hotloop (forever), killed at scope exit.
class HotLoop {
 public:
  HotLoop() { pid_ = Spawn({kBin + "/example_hotloop", "0"}); }
  ~HotLoop() { Kill(); }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

inline std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline const char* kTestUser = "pathproftest";
inline const char* kTestGroup = "pathprof-test-clients";
// Creates the unprivileged test user and its group if absent; returns the setpriv prefix that
// runs a command as that user (no supplementary groups beyond the socket's group). Call it before
// starting a daemon that names the group. ctest runs tests as parallel processes, and on a fresh
// machine two of them would race to create the same group (one groupadd fails): flock makes it
// one at a time.
inline std::string EnsureTestUser() {
  Sh(std::string("flock /tmp/pathprof-test-user.lock sh -c 'getent group ") + kTestGroup +
     " >/dev/null || groupadd " + kTestGroup + "; id " + kTestUser +
     " >/dev/null 2>&1 || useradd -M -N -g " + kTestGroup + " -s /usr/sbin/nologin " + kTestUser +
     "'");
  return std::string("setpriv --reuid=") + kTestUser + " --regid=" + kTestGroup +
         " --clear-groups ";
}

// A second unprivileged user in the same group, for attacks that take two users; returns its
// setpriv prefix.
inline const char* kSecondTestUser = "pathproftest2";
inline std::string EnsureSecondTestUser() {
  EnsureTestUser();
  Sh(std::string("flock /tmp/pathprof-test-user.lock sh -c 'id ") + kSecondTestUser +
     " >/dev/null 2>&1 || useradd -M -N -g " + kTestGroup + " -s /usr/sbin/nologin " +
     kSecondTestUser + "'");
  return std::string("setpriv --reuid=") + kSecondTestUser + " --regid=" + kTestGroup +
         " --clear-groups ";
}

// The group the tests name as the daemon's admin group, created if absent (nobody is in it).
inline const char* kAdminGroup = "pathprof-test-admins";
inline void EnsureAdminGroup() {
  Sh(std::string("flock /tmp/pathprof-test-user.lock sh -c 'getent group ") + kAdminGroup +
     " >/dev/null || groupadd " + kAdminGroup + "'");
}

// First line of `out`.
inline std::string FirstLine(const std::string& out) {
  return out.substr(0, out.find('\n'));
}

// A memory size of `pid`'s status in MiB (`field`: VmRSS, VmHWM, ...), 0 if unreadable.
inline long StatusMiB(pid_t pid, std::string_view field) {
  auto text = procfs::Procfs::Host().Read(pid, "status");
  if (!text.ok()) return 0;
  const auto kib = procfs::StatusField(*text, field);  // "1234 kB"
  return kib ? std::stol(std::string(*kib)) / 1024 : 0;
}

// Resident memory of `pid` in MiB (VmRSS), 0 if unreadable.
inline long RssMiB(pid_t pid) {
  return StatusMiB(pid, "VmRSS");
}

inline uid_t UidOf(const char* user) {
  const passwd* p = getpwnam(user);
  return p != nullptr ? p->pw_uid : 0;
}

// Root's `pathctl ps` answers, and within a second of its own start-up. A sanitizer-built
// pathctl takes 0.5 s to start on an idle 2-core VM and over a second when the suite's other
// test and an attacker share the cores (CI: 1.1 s and 1.6 s for the whole `ps`), so the
// second is counted from a `pathctl --version` started just before, which pays the same
// start-up under the same load and never talks to the daemon.
inline void ExpectRootServedWithinASecond(const Daemon& d) {
  using Clock = std::chrono::steady_clock;
  using Seconds = std::chrono::duration<double>;
  const auto version_start = Clock::now();
  Sh(std::string(kBin) + "/pathctl --version");
  const Seconds start_up = Clock::now() - version_start;
  const auto start = Clock::now();
  auto ps = d.Ctl("ps --timeout 3s");
  const Seconds took = Clock::now() - start;
  EXPECT_EQ(ps.rc, 0) << ps.out << d.Log().substr(0, 4000);
  EXPECT_LT(took.count() - start_up.count(), 1.0)
      << took.count() << " s for root's ps, " << start_up.count() << " s for pathctl --version";
}

// The argv prefix that runs a program as `user` in the test group, with no other group.
inline std::vector<std::string> AsUserArgv(const std::string& user = kTestUser) {
  return {"/usr/bin/setpriv", "--reuid=" + user, std::string("--regid=") + kTestGroup,
          "--clear-groups"};
}

}  // namespace pathprof::daemon::testing
