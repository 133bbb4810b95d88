// How windows are taken: the step mode in use, the ptrace options it needs on every thread,
// and the fallbacks when a mechanism fails at run time.
#include <signal.h>
#include <sys/ptrace.h>

#include "burst_tracer_impl.h"
#include "burst_wire.h"

namespace pathprof::stepping::burst {

void BurstTracer::SetMode(StepMode mode) {
  mode_ = mode;
  stats_.step_mode = static_cast<uint8_t>(mode);
  switch (mode) {
    case StepMode::kBreakpoints:
      stop_cost_ns_ = probe_.dr_leg_ns;
      break;
    case StepMode::kInt3:
      stop_cost_ns_ = probe_.int3_leg_ns;
      break;
    case StepMode::kSingleStep:
    case StepMode::kEmulate:  // one stop, as a step's, and the emulation (timed per window)
      stop_cost_ns_ = probe_.single_step_ns;
      break;
  }
  if (stop_cost_ns_ == 0) stop_cost_ns_ = probe_.single_step_ns;
  legs_worked_ = 0;
  timeouts_ = 0;
  window_cost_ns_ = 0;
}

long BurstTracer::DesiredOptions() const {
  long opts = PTRACE_O_TRACEEXEC;
  if (mode_ == StepMode::kInt3)
    opts |= PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
  return opts;
}

void BurstTracer::UpdateOptions(pid_t tid, Thread& t) {
  if (t.options == DesiredOptions()) return;
  if (ptrace(PTRACE_SETOPTIONS, tid, nullptr, reinterpret_cast<void*>(DesiredOptions())) == 0)
    t.options = DesiredOptions();
}

void BurstTracer::CheckEventLoad(uint64_t now, uint64_t cap) {
  if (mode_ != StepMode::kInt3 || event_window_.InLastSecond(now) <= cap / 2) return;
  ++stats_.step_mode_fallbacks;
  SetMode(probe_.dr_breakpoints.works ? StepMode::kBreakpoints : StepMode::kSingleStep);
  Note(
      "ptrace bursts: the target creates threads or processes too fast for int3 stepping "
      "(their stops alone took " +
      std::to_string(event_window_.InLastSecond(now) / 1000000) +
      " ms of the last second); stepping with " + std::string(StepModeName(mode_)) +
      " from now on");
}

void BurstTracer::OnTimeout() {
  ++timeouts_;
  if (mode_ == StepMode::kSingleStep) return;
  if (legs_worked_ > 0 && timeouts_ < kTimeoutsBeforeFallback) return;
  const StepMode from = mode_;
  StepMode to = StepMode::kSingleStep;
  if (from == StepMode::kBreakpoints && probe_.int3_breakpoints.works) to = StepMode::kInt3;
  SetMode(to);
  ++stats_.step_mode_fallbacks;
  Note("ptrace bursts: " + std::string(StepModeName(from)) +
       " breakpoints did not fire in time; stepping with " + std::string(StepModeName(to)) +
       " from now on");
}

bool BurstTracer::EnsureInt3Safe(pid_t stopped) {
  for (int pass = 0; pass < 10 && ScanThreads() > 0; ++pass) {
  }
  std::vector<pid_t> behind;
  for (auto& [tid, t] : threads_)
    if (t.options != DesiredOptions()) behind.push_back(tid);
  for (pid_t tid : behind) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) continue;
    Thread& t = it->second;
    if (tid == stopped) {  // the burst's own thread, in its interrupt stop already
      UpdateOptions(tid, t);
      if (t.options != DesiredOptions()) return false;
      continue;
    }
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) return false;
    int st = 0;
    if (WaitStop(tid, &st, kStopTimeoutNs) != StopWait::kStopped) return false;
    if ((st >> 16) != PTRACE_EVENT_STOP) {
      HandleEvent(tid, st);  // sets the options too, and resumes it
      auto again = threads_.find(tid);
      if (again == threads_.end() || again->second.options != DesiredOptions()) return false;
      continue;
    }
    if (!IsGroupStopSignal(WSTOPSIG(st))) SettleInterruptStop(tid);  // it may have been asleep
    UpdateOptions(tid, t);
    Resume(tid, 0);
    ChargeEventStops(1, stop_cost_ns_ * 2, MonotonicNs());
    if (t.options != DesiredOptions()) return false;
  }
  return ScanThreads() == 0;
}

}  // namespace pathprof::stepping::burst
