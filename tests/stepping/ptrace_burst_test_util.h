// Helpers for the live ptrace-burst tests: start example programs, read their /proc state,
// collect what a burst collector hands on.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/stepping/ptrace_bursts.h"

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
  auto text = procfs::Procfs::Host().Read(pid, "status");
  if (!text.ok()) return "";
  const auto value = procfs::StatusField(*text, name);
  if (!value) return "";
  std::istringstream ls{std::string(*value)};
  std::string v;
  ls >> v;  // the first word: "S" of "S (sleeping)"
  return v;
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
  auto stat = procfs::Procfs::Host().ReadStat(pid);
  if (!stat.ok()) return s;
  s.state = stat->state;
  s.cpu_ticks = stat->utime_ticks + stat->stime_ticks;
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

// What a burst collector handed on: its windows and notes (a verified window that differed is a
// note), from its threads.
struct Collected {
  std::mutex mu;
  std::vector<BranchBatch> windows;
  std::vector<std::string> notes;
  PtraceBurstSink Sink() {
    PtraceBurstSink s;
    s.on_window = [this](const BranchBatch& b) {
      std::lock_guard<std::mutex> lock(mu);
      windows.push_back(b);
    };
    s.on_note = [this](const std::string& n) {
      std::lock_guard<std::mutex> lock(mu);
      notes.push_back(n);
    };
    return s;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return windows.size();
  }
  // Windows with an event that starts in [begin, end): a branch retired there.
  size_t WindowsBranchingFrom(uint64_t begin, uint64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const BranchBatch& b : windows)
      for (const BranchEvent& e : b.events)
        if (e.from >= begin && e.from < end) {
          ++n;
          break;
        }
    return n;
  }
  std::string Notes() {
    std::lock_guard<std::mutex> lock(mu);
    std::string all;
    for (const std::string& n : notes) all += n + "\n";
    return all;
  }
};

}  // namespace pathprof::stepping::testing
