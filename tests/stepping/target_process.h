// A live example program for the tracer tests, its output read through a pipe.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/core/clock.h"
#include "ptrace_burst_test_util.h"

namespace pathprof::stepping::testing {

// Every wait of a Target is bounded by these (they bound hangs; nothing is timed against them).
constexpr int kReadyMs = 10000;
constexpr int kExitMs = 20000;

// An example program on a pipe: its first lines say where things are, its last line how it went.
// With `input`, its standard input is a pipe too, which CloseInput closes (a program that waits
// for the end of its input ends without a signal, which would interrupt its system calls).
class Target {
 public:
  explicit Target(const std::vector<std::string>& argv, bool input = false) {
    int p[2];
    int in[2] = {-1, -1};
    if (pipe2(p, O_CLOEXEC) != 0) return;
    if (input && pipe2(in, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      if (input) dup2(in[0], 0);
      std::vector<char*> c;
      for (const std::string& a : argv) c.push_back(const_cast<char*>(a.c_str()));
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    close(p[1]);
    out_ = p[0];
    if (input) {
      close(in[0]);
      in_ = in[1];
    }
  }
  ~Target() {
    if (pid_ > 0 && !reaped_) {  // a test that failed early: ours to end
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
    CloseInput();
  }
  pid_t pid() const { return pid_; }
  void CloseInput() {
    if (in_ >= 0) close(in_);
    in_ = -1;
  }

  // The whole line that is "key" or starts with "key ", waiting for it (bounded); "" when it
  // never came.
  std::string Line(const std::string& key) {
    for (const uint64_t deadline = MonotonicNs() + kReadyMs * 1'000'000ull;;) {
      std::istringstream lines(text_);
      std::string line;
      while (std::getline(lines, line))
        if ((line == key || line.rfind(key + " ", 0) == 0) && !lines.eof()) return line;
      const uint64_t now = MonotonicNs();
      if (now >= deadline || ReadSome(static_cast<int>((deadline - now) / 1'000'000)) == Read::kEnd)
        break;
    }
    ADD_FAILURE() << "no \"" << key << "\" line from pid " << pid_ << ": " << text_;
    return "";
  }
  // The number after "key " ("0x..." or decimal).
  uint64_t Value(const std::string& key) {
    const std::string line = Line(key);
    return line.empty() ? 0 : std::strtoull(line.c_str() + key.size(), nullptr, 0);
  }

  // Waits (bounded) for it to exit on its own, reading its output to the end; false (and it is
  // killed) when it does not exit in time.
  bool Finish() {
    const uint64_t deadline = MonotonicNs() + kExitMs * 1'000'000ull;
    auto ms_left = [&] {
      const uint64_t now = MonotonicNs();
      return now >= deadline ? 0 : static_cast<int>((deadline - now) / 1'000'000);
    };
    while (ms_left() > 0 && ReadSome(ms_left()) != Read::kEnd) {
    }
    const bool exited =
        WaitFor([&] { return waitpid(pid_, &status_, WNOHANG) == pid_; }, ms_left());
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
    }
    reaped_ = true;
    return exited;
  }
  bool ExitedCleanly() const { return WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }
  int status() const { return status_; }
  const std::string& output() const { return text_; }

 private:
  enum class Read { kData, kNothing, kEnd };
  // Reads what comes within `timeout_ms`.
  Read ReadSome(int timeout_ms) {
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return Read::kNothing;
    char buf[4096];
    const ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) return Read::kEnd;
    text_.append(buf, static_cast<size_t>(n));
    return Read::kData;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  std::string text_;
  int status_ = -1;
  bool reaped_ = false;
};

}  // namespace pathprof::stepping::testing
