#include "pathprof/stepping/ptrace_bursts.h"

#include "pathprof/emulator/window_emulator.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "burst_wire.h"
#include "pathprof/core/procfs.h"
#include "pathprof/stepping/step_probe.h"
#include "tracer_helper.h"

namespace pathprof::stepping {
namespace {

constexpr int kStartTimeoutMs = 10000;  // probe (first time per boot) and seizing every thread
// The tracer's own detach is bounded at 400 ms; before it, the window under way when the stop
// came ends within the stopped time the cap leaves it (up to cap x 1 s).
constexpr int kQuitTimeoutMs = 600;
constexpr int kKillTimeoutMs = 400;

std::string CommandName(pid_t pid) {
  auto comm = procfs::Procfs::Host().Comm(pid);
  return comm.ok() && !comm->empty() ? *comm : "?";
}

pid_t ParentOf(pid_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  return status.ok() ? status->ppid : 0;
}

std::string ExitText(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

std::string Format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

static_assert(emulator::kEmulationEndCount <= kEmulationEndSlots);

std::string_view EmulationEndReason(size_t slot) {
  if (slot >= static_cast<size_t>(emulator::kEmulationEndCount)) return "?";
  return emulator::EmulationEndName(static_cast<emulator::EmulationEnd>(slot));
}

std::string_view InstructionName(uint16_t mnemonic) {
  return emulator::MnemonicName(mnemonic);
}

Status PtraceBurstOptions::Validate() const {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "ptrace bursts: give a target pid > 0");
  if (window_taken == 0 || window_taken > 4096)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: window_taken must be in 1..4096 (32 matches LBR)");
  if (!(bursts_per_second >= 0) || bursts_per_second > 100000)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: bursts_per_second must be in [0, 100000] (0: the step mode's)");
  if (!(max_stopped_fraction > 0) || max_stopped_fraction > 1)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: max_stopped_fraction must be in (0, 1]");
  if (max_steps_per_burst < window_taken)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: max_steps_per_burst must be at least window_taken");
  return Status::Ok();
}

Status CheckTraceable(pid_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(pid);
  if (!status.ok())
    return Error(ErrorCode::kNotFound, "ptrace bursts: process " + std::to_string(pid) +
                                           " does not exist (" + status.status().message() + ")");
  if (status->tgid != pid)
    return Error(ErrorCode::kInvalidArgument,
                 "ptrace bursts: " + std::to_string(pid) +
                     " is a thread, not a process; give its process id (Tgid " +
                     std::to_string(status->tgid) + ")");
  if (pid == getpid())
    return Error(ErrorCode::kInvalidArgument, "ptrace bursts: refusing to trace process " +
                                                  std::to_string(pid) + " (" + CommandName(pid) +
                                                  "): it is pathprof itself");
  for (pid_t a = getppid(); a > 0; a = ParentOf(a)) {
    if (a == pid)
      return Error(ErrorCode::kInvalidArgument,
                   "ptrace bursts: refusing to trace process " + std::to_string(pid) + " (" +
                       CommandName(pid) +
                       "): it is an ancestor of pathprof, which would then wait on itself");
    if (a == 1) break;
  }
  if (IsOwnHelper(pid) || IsOwnHelper(ParentOf(pid)))
    return Error(ErrorCode::kInvalidArgument, "ptrace bursts: refusing to trace process " +
                                                  std::to_string(pid) +
                                                  ": it is one of pathprof's own helper processes");
  const pid_t tracer_pid = status->tracer_pid;
  if (tracer_pid != 0)
    return Error(ErrorCode::kUnavailable,
                 "ptrace bursts: process " + std::to_string(pid) + " (" + CommandName(pid) +
                     ") is already traced by process " + std::to_string(tracer_pid) + " (" +
                     CommandName(tracer_pid) +
                     "); a process has one tracer at a time: detach that debugger or tracer "
                     "first, or profile with the eBPF stack sampler instead");
  return Status::Ok();
}

Result<std::unique_ptr<PtraceBurstCollector>> PtraceBurstCollector::Start(
    const PtraceBurstOptions& options, PtraceBurstSink sink) {
  PATHPROF_RETURN_IF_ERROR(options.Validate());
  PATHPROF_RETURN_IF_ERROR(CheckTraceable(options.pid));
  std::vector<std::string> args = {"bursts",
                                   "--parent",
                                   std::to_string(getpid()),
                                   "--pid",
                                   std::to_string(options.pid),
                                   "--window",
                                   std::to_string(options.window_taken),
                                   "--rate",
                                   Format(options.bursts_per_second),
                                   "--cap",
                                   Format(options.max_stopped_fraction),
                                   "--max-steps",
                                   std::to_string(options.max_steps_per_burst),
                                   "--step-mode",
                                   std::string(StepRequestName(options.step_mode)),
                                   "--seed",
                                   std::to_string(options.seed),
                                   "--verify-emulation",
                                   options.verify_emulation ? "1" : "0"};
  if (options.run_as) {
    args.insert(args.end(), {"--uid", std::to_string(options.run_as->uid), "--gid",
                             std::to_string(options.run_as->gid)});
    // A tracer that becomes another user in-process is no longer dumpable (the kernel's rule
    // for a process whose credentials changed), nor is the probe child it forks, whose memory
    // it then may not read: its own probe found emulation and both breakpoint mechanisms
    // broken and stepped with single steps, though they work on the user's own (dumpable)
    // target. It takes this process's probe instead, the one that says what `auto` means
    // everywhere else (step_probe.h), and so decides as an admin session's tracer does.
    const StepProbeResult probe = CachedStepProbe();
    if (probe.ran) args.insert(args.end(), {"--probe", probe.Serialize()});
  }
  PATHPROF_ASSIGN_OR_RETURN(auto helper,
                            SpawnTracerHelper(args, /*raise_priority=*/!options.run_as));
  std::unique_ptr<PtraceBurstCollector> c(new PtraceBurstCollector());
  // A verified window under way at the stop (thousands of single steps, up to the cap's room:
  // 0.5 s at a 50% cap) plus the detach: with 600 ms alone, a loaded host killed a tracer that
  // was finishing its window.
  c->quit_timeout_ms_ = kQuitTimeoutMs + static_cast<int>(options.max_stopped_fraction * 1000);
  c->sink_ = std::move(sink);
  c->tracer_pid_ = helper.pid;
  c->pidfd_ = helper.pidfd;
  c->data_fd_ = helper.data_fd;
  c->control_fd_ = helper.control_fd;
  fcntl(c->control_fd_, F_SETFL, O_NONBLOCK);

  // The hello, then ready (every thread seized) or the reason it could not be.
  wire::Header h{};
  std::vector<uint8_t> payload;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartTimeoutMs);
  auto receive = [&]() {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    return wire::Receive(c->data_fd_, static_cast<int>(std::max<long>(left, 1)), &h, &payload);
  };
  auto fail = [&](ErrorCode code, const std::string& why) {
    c->Stop();
    const std::string exit =
        c->tracer_status_ >= 0 ? " (the tracer " + ExitText(c->tracer_status_) + ")" : "";
    return Error(code, why + exit);
  };
  wire::ReceiveResult r = receive();
  const wire::Hello ours = wire::OurHello();
  wire::Hello theirs{};
  if (r != wire::ReceiveResult::kMessage || h.type != wire::Type::kHello ||
      payload.size() != sizeof theirs)
    return fail(ErrorCode::kUnavailable,
                r == wire::ReceiveResult::kTimeout
                    ? "ptrace bursts: the tracer helper did not answer within 10 s"
                    : "ptrace bursts: the tracer helper ended before it said hello");
  std::memcpy(&theirs, payload.data(), sizeof theirs);
  if (std::memcmp(&theirs, &ours, sizeof ours) != 0)
    return fail(ErrorCode::kUnsupported,
                "ptrace bursts: the tracer helper speaks protocol " +
                    std::to_string(theirs.version) + ", this build " +
                    std::to_string(ours.version) +
                    ": it is from another pathprof build; reinstall pathprof");
  r = receive();
  if (r == wire::ReceiveResult::kMessage && h.type == wire::Type::kError &&
      payload.size() >= sizeof(wire::ErrorHeader)) {
    wire::ErrorHeader eh{};
    std::memcpy(&eh, payload.data(), sizeof eh);
    return fail(static_cast<ErrorCode>(eh.code),
                std::string(payload.begin() + sizeof eh, payload.end()));
  }
  if (r != wire::ReceiveResult::kMessage || h.type != wire::Type::kReady || payload.size() != 1)
    return fail(ErrorCode::kUnavailable,
                r == wire::ReceiveResult::kTimeout
                    ? "ptrace bursts: the tracer did not seize the target within 10 s"
                    : "ptrace bursts: the tracer ended before it seized the target");
  c->step_mode_ = static_cast<StepMode>(payload[0]);
  c->reader_ = std::thread([p = c.get()] { p->ReadLoop(); });
  return c;
}

void PtraceBurstCollector::ReadLoop() {
  wire::Header h{};
  std::vector<uint8_t> payload;
  for (;;) {
    const wire::ReceiveResult r = wire::Receive(data_fd_, 200, &h, &payload);
    if (r == wire::ReceiveResult::kTimeout) continue;
    if (r != wire::ReceiveResult::kMessage) break;
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
        if (sink_.on_note) sink_.on_note(std::string(payload.begin(), payload.end()));
        break;
      case wire::Type::kExec:
        if (sink_.on_exec) sink_.on_exec();
        break;
      case wire::Type::kError:
        if (sink_.on_note && payload.size() >= sizeof(wire::ErrorHeader))
          sink_.on_note(std::string(payload.begin() + sizeof(wire::ErrorHeader), payload.end()));
        break;
      case wire::Type::kHello:
      case wire::Type::kReady:
        break;
    }
  }
  Reap(kQuitTimeoutMs + kKillTimeoutMs);
  std::lock_guard<std::mutex> lock(mu_);
  if (!stats_.detached && failure_.empty())
    failure_ = tracer_status_ >= 0 ? "the tracer process " + ExitText(tracer_status_)
                                   : "the tracer process stopped reporting";
  finished_.store(true);
  finished_cv_.notify_all();
}

// Waits (bounded) for the tracer process to exit and collects its status.
void PtraceBurstCollector::Reap(int timeout_ms) {
  if (tracer_pid_ <= 0 || tracer_status_ >= 0) return;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    while (poll(&p, 1, timeout_ms) < 0 && errno == EINTR) {
    }
  }
  int st = 0;
  for (int waited = 0;; waited += 5) {
    const pid_t r = waitpid(tracer_pid_, &st, WNOHANG);
    if (r == tracer_pid_) {
      tracer_status_ = st;
      ForgetHelper(tracer_pid_);
      return;
    }
    if ((r < 0 && errno != EINTR) || waited >= timeout_ms) return;
    usleep(5000);
  }
}

bool PtraceBurstCollector::WaitFinished(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return finished_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                               [&] { return finished_.load(); });
}

PtraceBurstStats PtraceBurstCollector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string PtraceBurstCollector::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void PtraceBurstCollector::RequestStop() {
  // The stop request: a 'q', and the pipe's end for good measure. The tracer may be gone
  // already: a write to its closed pipe must not SIGPIPE the process we live in.
  if (control_fd_ < 0) return;
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  if (write(control_fd_, "q", 1) < 0 && errno == EPIPE) {
    const timespec none{0, 0};
    sigtimedwait(&pipe_set, nullptr, &none);  // consume the SIGPIPE we just caused
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(control_fd_);
  control_fd_ = -1;
}

PtraceBurstStats PtraceBurstCollector::Stop() {
  if (stopped_) return stats();
  stopped_ = true;
  RequestStop();
  const bool reading = reader_.joinable();
  if (!reading) {
    // Start failed before the reader began: drain to EOF so the tracer can finish writing.
    wire::Header h{};
    std::vector<uint8_t> payload;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kQuitTimeoutMs);
    while (std::chrono::steady_clock::now() < deadline &&
           wire::Receive(data_fd_, 50, &h, &payload) != wire::ReceiveResult::kEof) {
    }
  }
  if (!(reading ? WaitFinished(quit_timeout_ms_) : (Reap(quit_timeout_ms_), tracer_status_ >= 0))) {
    // Wedged beyond its own deadlines: end it. The kernel then detaches every thread.
    if (tracer_pid_ > 0) kill(tracer_pid_, SIGKILL);
    killed_ = true;
    if (reading) WaitFinished(kKillTimeoutMs);
  }
  if (reader_.joinable()) reader_.join();
  Reap(kKillTimeoutMs);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (killed_) failure_ = "the tracer did not detach in time and was killed";
  }
  if (data_fd_ >= 0) close(data_fd_);
  data_fd_ = -1;
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
  finished_.store(true);
  return stats();
}

PtraceBurstCollector::~PtraceBurstCollector() {
  Stop();
}

}  // namespace pathprof::stepping
