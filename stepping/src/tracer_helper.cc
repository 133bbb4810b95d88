#include "tracer_helper.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pathprof::stepping {
namespace {

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

}  // namespace

Result<std::string> TracerHelperPath() {
  HelperLocation where;
  where.name = "pathprof-tracer";
  where.env_var = "PATHPROF_TRACER";
#ifdef PATHPROF_TRACER_INSTALL_PATH
  where.install_path = PATHPROF_TRACER_INSTALL_PATH;
#endif
#ifdef PATHPROF_TRACER_BUILD_PATH
  where.build_path = PATHPROF_TRACER_BUILD_PATH;
#endif
  where.purpose = "the ptrace helper";
  return FindHelper(where);
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
  auto pid = SpawnHelper(path, args, {control[0], data[1]});
  CloseAll({control[0], data[1]});
  if (!pid.ok()) {
    CloseAll({control[1], data[0]});
    return WithContext(pid.status(), "ptrace helper");
  }
  // A traced thread waits, stopped, until the tracer runs: on a loaded host an ordinary-priority
  // tracer is one more runnable task, and each stop can last a scheduler slice (with two CPU
  // hogs on 2 vCPUs a daemon session got 33 windows in 15 s, 109 with the tracer at nice -10).
  // The tracer runs only to handle stops, so its priority costs others little and shortens the
  // target's stopped time. Best effort: without CAP_SYS_NICE it keeps the default.
  if (raise_priority) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(*pid), kTracerNice);
  HelperProcess h;
  h.pid = *pid;
  h.pidfd = static_cast<int>(syscall(SYS_pidfd_open, *pid, 0));
  h.control_fd = control[1];
  h.data_fd = data[0];
  return h;
}

}  // namespace pathprof::stepping
