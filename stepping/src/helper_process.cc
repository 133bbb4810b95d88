#include "pathprof/stepping/helper_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "pathprof/core/procfs.h"

extern char** environ;

namespace pathprof::stepping {
namespace {

// How long a killed helper has to end before it is left to a later reap.
constexpr int kKilledExitMs = 2'000;

std::mutex g_helpers_mu;
std::set<pid_t> g_helpers;
std::set<pid_t> g_unreaped;  // helpers that had not ended when their reap gave up on them

// Its wait status when helper `pid` ends within `timeout_ms` (reaped, forgotten).
std::optional<int> TryReap(pid_t pid, int pidfd, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {  // ECHILD: reaped already, status unknown
      ForgetHelper(pid);
      return r == pid ? status : 0;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      (void)poll(&p, 1, static_cast<int>(left.count()));  // readable once it has exited
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(10)));
    }
  }
}

// Reaps the helpers a reap gave up on that have ended since.
void ReapPending() {
  std::vector<pid_t> pending;
  {
    std::lock_guard<std::mutex> lock(g_helpers_mu);
    pending.assign(g_unreaped.begin(), g_unreaped.end());
  }
  for (pid_t pid : pending) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r != pid && !(r < 0 && errno == ECHILD)) continue;
    ForgetHelper(pid);
    std::lock_guard<std::mutex> lock(g_helpers_mu);
    g_unreaped.erase(pid);
  }
}

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

std::string SelfDir() {
  auto self = procfs::Procfs::Host().Executable(getpid());
  if (!self.ok()) return "";
  const std::string& path = *self;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

Result<std::string> FindHelper(const HelperLocation& where) {
  std::string searched;
  if (const char* env = std::getenv(where.env_var.c_str())) {
    if (Executable(env)) return std::string(env);
    searched += std::string(env) + " ($" + where.env_var + "), ";
  }
  const std::string beside = SelfDir() + "/" + where.name;
  if (Executable(beside)) return beside;
  searched += beside;
  for (const std::string& path : {where.install_path, where.build_path}) {
    if (path.empty()) continue;
    if (Executable(path)) return path;
    searched += ", " + path;
  }
  return Error(ErrorCode::kNotFound,
               where.purpose + " " + where.name + " is not installed (looked at " + searched +
                   "); reinstall pathprof, or point $" + where.env_var + " at it");
}

Result<pid_t> SpawnHelper(const std::string& path, const std::vector<std::string>& args,
                          const std::vector<int>& child_fds) {
  ReapPending();
  // The helper's ends must land on 3, 4, ... dup2 onto an fd that already is the source would
  // keep its close-on-exec flag, so go through copies above every target first.
  const int first_free = 3 + static_cast<int>(child_fds.size()) + 10;
  std::vector<int> copies;
  for (int fd : child_fds) copies.push_back(fcntl(fd, F_DUPFD_CLOEXEC, first_free));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (size_t i = 0; i < copies.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, copies[i], 3 + static_cast<int>(i));
  posix_spawn_file_actions_addclosefrom_np(&actions, 3 + static_cast<int>(copies.size()));
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const bool copied = std::find(copies.begin(), copies.end(), -1) == copies.end();
  const int rc =
      copied ? posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ) : EMFILE;
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : copies)
    if (fd >= 0) close(fd);
  if (rc != 0)
    return Error(ErrorCode::kUnavailable, "cannot run " + path + ": " + std::strerror(rc));
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  g_helpers.insert(pid);
  return pid;
}

bool IsOwnHelper(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  return g_helpers.count(pid) != 0;
}

void ForgetHelper(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  g_helpers.erase(pid);
}

int ReapHelper(pid_t pid, int pidfd, int timeout_ms) {
  ReapPending();
  if (const std::optional<int> status = TryReap(pid, pidfd, timeout_ms)) return *status;
  // A helper that became another user cannot be killed by a daemon without CAP_KILL (the
  // packaged one runs as `pathprof`), and one in an uninterruptible wait dies late: neither is
  // waited for here. It is reaped when it has ended, at a later spawn or reap.
  const bool killed = kill(pid, SIGKILL) == 0 || errno == ESRCH;
  if (killed)
    if (const std::optional<int> status = TryReap(pid, pidfd, kKilledExitMs)) return *status;
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  g_unreaped.insert(pid);
  return killed ? kHelperNotReaped : kHelperNotKilled;
}

std::string DescribeHelperExit(int wait_status) {
  if (wait_status == kHelperNotKilled)
    return "could not be killed (it runs as another user and this process lacks CAP_KILL; it "
           "ends at its own deadline or with this process)";
  if (wait_status == kHelperNotReaped)
    return "was killed but had not ended " + std::to_string(kKilledExitMs) + " ms later";
  if (WIFEXITED(wait_status))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended";
}

}  // namespace pathprof::stepping
