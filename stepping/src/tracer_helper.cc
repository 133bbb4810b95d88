#include "tracer_helper.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

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

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

}  // namespace

Result<std::string> TracerHelperPath() {
  std::string searched;
  if (const char* env = std::getenv("PATHPROF_TRACER")) {
    if (Executable(env)) return std::string(env);
    searched += std::string(env) + " ($PATHPROF_TRACER), ";
  }
  const std::string beside = SelfDir() + "/pathprof-tracer";
  if (Executable(beside)) return beside;
  searched += beside + ", ";
#ifdef PATHPROF_TRACER_INSTALL_PATH
  if (Executable(PATHPROF_TRACER_INSTALL_PATH)) return std::string(PATHPROF_TRACER_INSTALL_PATH);
  searched += PATHPROF_TRACER_INSTALL_PATH;
#endif
#ifdef PATHPROF_TRACER_BUILD_PATH
  if (Executable(PATHPROF_TRACER_BUILD_PATH)) return std::string(PATHPROF_TRACER_BUILD_PATH);
  searched += std::string(", ") + PATHPROF_TRACER_BUILD_PATH;
#endif
  return Error(ErrorCode::kNotFound,
               "the ptrace helper pathprof-tracer is not installed (looked at " + searched +
                   "); reinstall pathprof, or point $PATHPROF_TRACER at it");
}

constexpr int kTracerNice = -10;

Result<HelperProcess> SpawnTracerHelper(const std::vector<std::string>& args, bool raise_priority) {
  PATHPROF_ASSIGN_OR_RETURN(auto path, TracerHelperPath());
  int control[2] = {-1, -1}, data[2] = {-1, -1};
  if (pipe2(control, O_CLOEXEC) != 0 || pipe2(data, O_CLOEXEC) != 0) {
    const int err = errno;
    CloseAll({control[0], control[1], data[0], data[1]});
    return Error(ErrorCode::kResourceExhausted,
                 std::string("ptrace helper: pipe failed: ") + std::strerror(err));
  }
  // The helper's ends must land on 3 and 4. dup2 onto an fd that already is the source would
  // keep its close-on-exec flag, so go through copies above both first.
  const int child_control = fcntl(control[0], F_DUPFD_CLOEXEC, 10);
  const int child_data = fcntl(data[1], F_DUPFD_CLOEXEC, 10);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_control, 3);
  posix_spawn_file_actions_adddup2(&actions, child_data, 4);
  posix_spawn_file_actions_addclosefrom_np(&actions, 5);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CloseAll({child_control, child_data, control[0], data[1]});
  if (rc != 0) {
    CloseAll({control[1], data[0]});
    return Error(ErrorCode::kUnavailable,
                 "ptrace helper: cannot run " + path + ": " + std::strerror(rc));
  }
  // A traced thread waits, stopped, until the tracer runs: on a loaded host an ordinary-priority
  // tracer is one more runnable task, and each stop can last a scheduler slice (with two CPU
  // hogs on 2 vCPUs a daemon session got 33 windows in 15 s, 109 with the tracer at nice -10).
  // The tracer runs only to handle stops, so its priority costs others little and shortens the
  // target's stopped time. Best effort: without CAP_SYS_NICE it keeps the default.
  if (raise_priority) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(pid), kTracerNice);
  HelperProcess h;
  h.pid = pid;
  h.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  h.control_fd = control[1];
  h.data_fd = data[0];
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  g_helpers.insert(pid);
  return h;
}

bool IsOwnHelper(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  return g_helpers.count(pid) != 0;
}

void ForgetHelper(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_helpers_mu);
  g_helpers.erase(pid);
}

}  // namespace pathprof::stepping
