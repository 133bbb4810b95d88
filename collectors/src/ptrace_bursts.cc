#include "pathprof/collectors/ptrace_bursts.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "burst_tracer.h"
#include "burst_wire.h"

namespace pathprof::collectors {
namespace {

// "Name:\tvalue" from /proc/PID/status; empty when absent.
std::string StatusField(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      size_t i = name.size() + 1;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      return line.substr(i);
    }
  }
  return "";
}

std::string CommandName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name.empty() ? "?" : name;
}

}  // namespace

Status PtraceBurstOptions::Validate() const {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "ptrace bursts: give a target pid > 0");
  if (window_taken == 0 || window_taken > 4096)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: window_taken must be in 1..4096 (32 matches LBR)");
  if (!(bursts_per_second > 0) || bursts_per_second > 100000)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: bursts_per_second must be in (0, 100000]");
  if (!(max_stopped_fraction > 0) || max_stopped_fraction > 1)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: max_stopped_fraction must be in (0, 1]");
  if (max_steps_per_burst < window_taken)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: max_steps_per_burst must be at least window_taken");
  return Status::Ok();
}

Status CheckTraceable(pid_t pid) {
  const std::string tracer = StatusField(pid, "TracerPid");
  if (tracer.empty())
    return Error(ErrorCode::kNotFound, "ptrace bursts: process " + std::to_string(pid) +
                                           " does not exist (no /proc/" + std::to_string(pid) +
                                           "/status)");
  if (StatusField(pid, "Tgid") != std::to_string(pid))
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: " + std::to_string(pid) +
                     " is a thread, not a process; give its process id (Tgid " +
                     StatusField(pid, "Tgid") + ")");
  const long tracer_pid = std::strtol(tracer.c_str(), nullptr, 10);
  if (tracer_pid != 0)
    return Error(ErrorCode::kUnavailable,
                 "ptrace bursts: process " + std::to_string(pid) + " (" + CommandName(pid) +
                     ") is already traced by process " + std::to_string(tracer_pid) + " (" +
                     CommandName(static_cast<pid_t>(tracer_pid)) +
                     "); a process has one tracer at a time: detach that debugger or tracer "
                     "first, or profile with the eBPF stack sampler instead");
  return Status::Ok();
}

Result<std::unique_ptr<PtraceBurstCollector>> PtraceBurstCollector::Start(
    const PtraceBurstOptions& options, PtraceBurstSink sink) {
  PATHPROF_RETURN_IF_ERROR(options.Validate());
  PATHPROF_RETURN_IF_ERROR(CheckTraceable(options.pid));
  int data[2], control[2];
  if (pipe2(data, O_CLOEXEC) != 0)
    return Error(ErrorCode::kResourceExhausted,
                 std::string("ptrace bursts: pipe failed: ") + std::strerror(errno));
  if (pipe2(control, O_CLOEXEC) != 0) {
    close(data[0]);
    close(data[1]);
    return Error(ErrorCode::kResourceExhausted,
                 std::string("ptrace bursts: pipe failed: ") + std::strerror(errno));
  }
  pid_t child = fork();
  if (child < 0) {
    for (int fd : {data[0], data[1], control[0], control[1]}) close(fd);
    return Error(ErrorCode::kResourceExhausted,
                 std::string("ptrace bursts: fork failed: ") + std::strerror(errno));
  }
  if (child == 0) {
    // Keep only our two pipe ends: a copy of another session's control pipe held here would
    // keep that session's tracer from ever seeing its stop request.
    const unsigned lo = static_cast<unsigned>(std::min(control[0], data[1]));
    const unsigned hi = static_cast<unsigned>(std::max(control[0], data[1]));
    close_range(3, lo - 1, 0);
    close_range(lo + 1, hi - 1, 0);
    close_range(hi + 1, ~0u, 0);
    _exit(RunBurstTracer(options, control[0], data[1]));
  }
  close(data[1]);
  close(control[0]);
  std::unique_ptr<PtraceBurstCollector> c(new PtraceBurstCollector());
  c->sink_ = std::move(sink);
  c->tracer_pid_ = child;
  c->data_fd_ = data[0];
  c->control_fd_ = control[1];
  // The first message says whether every thread was seized.
  wire::Header h{};
  std::vector<uint8_t> payload;
  if (!wire::Receive(c->data_fd_, &h, &payload) || h.type != wire::Type::kReady) {
    std::string why = h.type == wire::Type::kError
                          ? std::string(payload.begin(), payload.end())
                          : "ptrace bursts: the tracer process exited before attaching";
    c->Stop();
    ErrorCode code =
        why.find("EPERM") != std::string::npos ? ErrorCode::kPermission : ErrorCode::kUnavailable;
    return Error(code, why);
  }
  c->reader_ = std::thread([p = c.get()] { p->ReadLoop(); });
  return c;
}

void PtraceBurstCollector::ReadLoop() {
  wire::Header h{};
  std::vector<uint8_t> payload;
  while (wire::Receive(data_fd_, &h, &payload)) {
    switch (h.type) {
      case wire::Type::kWindow:
        if (sink_.on_window) sink_.on_window(wire::DecodeWindow(payload));
        break;
      case wire::Type::kStats:
        if (payload.size() == sizeof(PtraceBurstStats)) {
          std::lock_guard<std::mutex> lock(mu_);
          std::memcpy(&stats_, payload.data(), sizeof stats_);
        }
        break;
      case wire::Type::kNote:
      case wire::Type::kError:
        if (sink_.on_note) sink_.on_note(std::string(payload.begin(), payload.end()));
        break;
      case wire::Type::kReady:
        break;
    }
  }
  finished_.store(true);
}

bool PtraceBurstCollector::WaitFinished(int timeout_ms) {
  // The reader thread flips finished_ at EOF; poll it (no condition variable on the hot path).
  for (int waited = 0; !finished_.load() && waited < timeout_ms; waited += 10) usleep(10000);
  return finished_.load();
}

PtraceBurstStats PtraceBurstCollector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

PtraceBurstStats PtraceBurstCollector::Stop() {
  if (stopped_) return stats();
  stopped_ = true;
  // Closing the control pipe is the stop request; the tracer detaches, reports and exits.
  if (control_fd_ >= 0) close(control_fd_);
  control_fd_ = -1;
  if (reader_.joinable()) {
    reader_.join();
  } else if (data_fd_ >= 0) {
    // Start failed before the reader began: drain to EOF so the tracer can finish writing.
    wire::Header h{};
    std::vector<uint8_t> payload;
    while (wire::Receive(data_fd_, &h, &payload)) {
    }
  }
  if (tracer_pid_ > 0) {
    int st;
    while (waitpid(tracer_pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (data_fd_ >= 0) close(data_fd_);
  data_fd_ = -1;
  finished_.store(true);
  return stats();
}

PtraceBurstCollector::~PtraceBurstCollector() {
  Stop();
}

}  // namespace pathprof::collectors
