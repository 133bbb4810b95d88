#include "pathctl/held_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pathctl {

using pathprof::ErrorCode;
using pathprof::Result;
using pathprof::Status;

Result<HeldCommand> HeldCommand::Fork(const std::vector<std::string>& argv, bool stdout_to_stderr) {
  if (argv.empty()) return Status(ErrorCode::kInvalidArgument, "no command to run");
  int go[2], exec_gate[2];
  if (pipe2(go, O_CLOEXEC) != 0)
    return Status(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  if (pipe2(exec_gate, O_CLOEXEC) != 0) {
    const int err = errno;
    close(go[0]);
    close(go[1]);
    return Status(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(err));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {go[0], go[1], exec_gate[0], exec_gate[1]}) close(fd);
    return Status(ErrorCode::kInternal, std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(go[1]);
    close(exec_gate[0]);
    char go_byte = 0;
    ssize_t n;
    do n = read(go[0], &go_byte, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);  // pathctl went away (or gave up) before letting it run
    if (stdout_to_stderr && dup2(2, 1) != 1) _exit(127);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    const int err = errno;
    (void)!write(exec_gate[1], &err, sizeof err);
    _exit(127);
  }
  close(go[0]);
  close(exec_gate[1]);
  return HeldCommand(pid, go[1], exec_gate[0], argv[0]);
}

HeldCommand::HeldCommand(HeldCommand&& other) noexcept
    : pid_(other.pid_),
      go_fd_(other.go_fd_),
      exec_fd_(other.exec_fd_),
      name_(std::move(other.name_)),
      released_(other.released_) {
  other.pid_ = -1;
  other.go_fd_ = other.exec_fd_ = -1;
}

HeldCommand::~HeldCommand() {
  if (go_fd_ >= 0) close(go_fd_);  // a held child reads EOF and exits 127
  if (exec_fd_ >= 0) close(exec_fd_);
  if (pid_ > 0 && !released_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

Status HeldCommand::Release() {
  released_ = true;
  const char go_byte = 1;
  ssize_t n;
  do n = write(go_fd_, &go_byte, 1);
  while (n < 0 && errno == EINTR);
  close(go_fd_);
  go_fd_ = -1;
  int err = 0;
  do n = read(exec_fd_, &err, sizeof err);
  while (n < 0 && errno == EINTR);
  close(exec_fd_);
  exec_fd_ = -1;
  if (n > 0) {
    waitpid(pid_, nullptr, 0);
    return Status(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument,
                  "cannot run '" + name_ + "': " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace pathctl
