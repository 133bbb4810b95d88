#include "pathprof/stepping/helper_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "pathprof/core/procfs.h"

extern char** environ;

namespace pathprof::stepping {
namespace {

std::mutex g_helpers_mu;
std::set<pid_t> g_helpers;

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
  bool exited = false;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    exited = poll(&p, 1, timeout_ms) > 0;
  }
  if (!exited && kill(pid, SIGKILL) != 0 && errno == EPERM) {
    // A helper that became another user cannot be killed by a daemon without CAP_KILL (the
    // packaged one runs as `pathprof`): waiting for it here could be forever. A thread of its
    // own reaps it once it ends (at its own deadline where it has one, or with this process).
    std::thread([pid] {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      ForgetHelper(pid);
    }).detach();
    return kHelperNotKilled;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ForgetHelper(pid);
  return status;
}

std::string DescribeHelperExit(int wait_status) {
  if (wait_status == kHelperNotKilled)
    return "could not be killed (it runs as another user and this process lacks CAP_KILL; it "
           "ends at its own deadline or with this process)";
  if (WIFEXITED(wait_status))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended";
}

}  // namespace pathprof::stepping
