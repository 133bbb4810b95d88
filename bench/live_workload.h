// The live programs the emulated-window benchmarks take windows of: a child runs the workload,
// seized (not stopped) by the benchmark's thread, killed at the end. The programs:
// example_hotloop_static from this build, Debian's zstd, xz, python3, sqlite3 and lua5.4 where
// installed, and lua5.4 as the optimizer loop builds it where the environment names it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pathprof/core/procfs.h"

namespace pathprof::bench {

class LiveTarget {
 public:
  explicit LiveTarget(std::vector<std::string> argv) {
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> a;
      for (std::string& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      const int null = open("/dev/null", O_WRONLY);  // the workloads write their output there
      dup2(null, 1);
      execv(a[0], a.data());
      _exit(127);
    }
    usleep(200'000);  // past start-up, into the steady work
    ok_ = pid_ > 0 && ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) == 0;
  }
  ~LiveTarget() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, __WALL);
  }
  LiveTarget(const LiveTarget&) = delete;
  LiveTarget& operator=(const LiveTarget&) = delete;
  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

// The folder of this benchmark's executable, where the examples and the tracer are built.
inline std::string BinDir() {
  const Result<std::string> exe = procfs::Procfs().Executable(getpid());
  return exe.ok() ? std::filesystem::path(exe.value()).parent_path().string() : ".";
}

// A zstd/xz input: 64 MiB of text-like bytes, written once.
inline std::string TextInput() {
  const std::string path = "/tmp/pathprof-emulated-window-bench.txt";
  if (!std::filesystem::exists(path)) {
    std::ofstream out(path);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < (64 << 20) / 8; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      out << "word" << (x % 997) << ' ';
    }
  }
  return path;
}

// The command line of `name`; empty when it has none (lua without its environment).
inline std::vector<std::string> LiveProgram(const std::string& name) {
  if (name == "hotloop") return {BinDir() + "/example_hotloop_static", "2000000000"};
  if (name == "zstd")  // one thread: -T1 would compress in a worker the bench does not seize
    return {"/usr/bin/zstd", "-19", "--single-thread", "-c", "-f", TextInput(), "-o", "/dev/null"};
  if (name == "xz") return {"/usr/bin/xz", "-9", "-T1", "-c", "-k", TextInput()};
  if (name == "python3")
    return {"/usr/bin/python3", "-c",
            "d={}\nfor i in range(10**9):\n  d[i%1000]=d.get(i%7,0)+len(str(i))"};
  if (name == "sqlite3")  // a B-tree of 200,000 rows, then an index lookup per row of a count
    return {"/usr/bin/sqlite3", ":memory:",
            "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);"
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)"
            " INSERT INTO t SELECT x, printf('%08x-%d', x * 2654435761 % 4294967296, x) FROM c;"
            "CREATE INDEX tb ON t(b);"
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000)"
            " SELECT sum((SELECT length(b) FROM t WHERE a = 1 + x * 7919 % 200000)) FROM c;"};
  if (name == "lua5.4")  // Debian's, on the optimizer loop's workload
    return {"/usr/bin/lua5.4", PATHPROF_BENCH_WORKLOADS "/lua_mixed.lua", "100000"};
  if (name == "lua") {  // Debian's lua5.4 built by scripts/bench-bolt-loop.sh, on its workload
    const char* lua = std::getenv("PATHPROF_BENCH_LUA");
    const char* script = std::getenv("PATHPROF_BENCH_LUA_SCRIPT");
    if (lua && script) return {lua, script, "100000"};
  }
  return {};
}

// Why `argv` (of LiveProgram(name)) cannot run, or "".
inline std::string LiveProgramMissing(const std::vector<std::string>& argv) {
  if (!argv.empty()) return access(argv[0].c_str(), X_OK) == 0 ? "" : argv[0] + " is not installed";
  return "lua is not set up: PATHPROF_BENCH_LUA=the lua.plain of scripts/bench-bolt-loop.sh, "
         "PATHPROF_BENCH_LUA_SCRIPT=bench/workloads/lua_mixed.lua";
}

}  // namespace pathprof::bench
