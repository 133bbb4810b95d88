// Helpers for the live ptrace-burst tests: start example programs, read their /proc state.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace pathprof::stepping::testing {

inline std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// fork + exec; the child is ours to kill and reap.
inline pid_t Spawn(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

inline void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
}

inline std::string StatusField(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0) {
      std::istringstream ls(line.substr(name.size() + 1));
      std::string v;
      ls >> v;
      return v;
    }
  return "";
}

inline long TracerPid(pid_t pid) {
  return std::strtol(StatusField(pid, "TracerPid").c_str(), nullptr, 10);
}

// State letter and utime+stime (clock ticks) from /proc/PID/stat.
struct ProcStat {
  char state = 0;
  unsigned long long cpu_ticks = 0;
};
inline ProcStat ReadProcStat(pid_t pid) {
  ProcStat s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream ls(all.substr(close + 2));
  std::string field;
  std::vector<std::string> f;
  while (ls >> field) f.push_back(field);
  if (f.size() < 13) return s;
  s.state = f[0][0];
  // Fields after the name: state(0) ... utime(11) stime(12).
  s.cpu_ticks = std::stoull(f[11]) + std::stoull(f[12]);
  return s;
}

// Polls `pred` every 10 ms for up to `timeout_ms` (waiting for the kernel, not timing anything).
inline bool WaitFor(const std::function<bool()>& pred, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (pred()) return true;
    usleep(10000);
  }
  return pred();
}

// The target runs on: not stopped, not traced, and it keeps burning CPU.
inline ::testing::AssertionResult RunsFreely(pid_t pid) {
  if (!WaitFor([&] { return TracerPid(pid) == 0; }, 5000))
    return ::testing::AssertionFailure() << "still traced by " << TracerPid(pid);
  ProcStat a = ReadProcStat(pid);
  if (a.state == 0) return ::testing::AssertionFailure() << "process " << pid << " is gone";
  bool advanced = WaitFor([&] { return ReadProcStat(pid).cpu_ticks >= a.cpu_ticks + 5; }, 5000);
  ProcStat b = ReadProcStat(pid);
  if (b.state == 't' || b.state == 'T')
    return ::testing::AssertionFailure() << "left stopped (state " << b.state << ")";
  if (!advanced)
    return ::testing::AssertionFailure()
           << "no CPU progress: " << a.cpu_ticks << " -> " << b.cpu_ticks << " ticks";
  int st;
  if (waitpid(pid, &st, WNOHANG) != 0)
    return ::testing::AssertionFailure() << "exited: status " << st;
  return ::testing::AssertionSuccess();
}

}  // namespace pathprof::stepping::testing
