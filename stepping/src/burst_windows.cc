// One window of a thread in its interrupt stop: stepped (window_stepper.h) or emulated
// (emulated_windows.h), and what it adds to the counters.
#include <sys/ptrace.h>

#include <algorithm>

#include "burst_tracer_impl.h"
#include "signal_masks.h"
#include "step_classifier.h"

namespace pathprof::stepping::burst {

bool BurstTracer::ReadyForWindow(pid_t tid, SyscallAtStop syscall, uint64_t rflags) {
  if (syscall != SyscallAtStop::kNone) {
    if (syscall == SyscallAtStop::kInterrupted) SettleInterruptStop(tid);
    ++stats_.aborted_syscall;
    Resume(tid, 0);
    return false;
  }
  // Emulated windows raise no trap; stepped ones (and the check of an emulated one) do.
  const bool traps = mode_ != StepMode::kEmulate || options_.verify_emulation;
  if ((rflags & kTrapFlag) || (traps && SigtrapForcingChangesHandler(options_.pid, tid))) {
    ++stats_.aborted_trap_flag;
    Resume(tid, 0);
    return false;
  }
  return true;
}

bool BurstTracer::StepWindow(pid_t tid, uint64_t t0, uint64_t room,
                             std::optional<SteppedWindow>* out) {
  if (mode_ == StepMode::kEmulate) return EmulateWindow(tid, out);
  StoppedThreadState state;
  if (!ReadStoppedThread(tid, &state)) {
    ++stats_.aborted_exit;
    Resume(tid, 0);
    return true;
  }
  if (!ReadyForWindow(tid, state.syscall, state.rflags)) return true;
  if (mode_ == StepMode::kInt3 && !EnsureInt3Safe(tid)) {
    // A thread could not be brought under the int3 options: never risk an untraced one
    // meeting our bytes.
    ++stats_.step_mode_fallbacks;
    SetMode(StepMode::kSingleStep);
    Note("ptrace bursts: could not trace every thread's creation; stepping with single steps");
  }
  WindowStepOptions wo;
  wo.mode = mode_;
  wo.window_taken = options_.window_taken;
  wo.max_stops = options_.max_steps_per_burst;
  wo.stop_timeout_ns = kStopTimeoutNs;
  const uint64_t spent = MonotonicNs() - t0;
  // The budget is checked every few stops: leave room for those, and an eighth for what comes
  // after the last one (int3 bytes restored, debug registers cleared, the thread resumed),
  // which the cap counts too: without it the worst second ran 0.5% over a 4% cap.
  const uint64_t slack = spent + 8 * stop_cost_ns_;
  wo.budget_ns = room > slack ? (room - slack) / 8 * 7 : 1;
  StepContext ctx;
  ctx.reader = &reader_;
  ctx.debug_registers = &threads_[tid].debug_registers;
  ctx.int3 = mode_ == StepMode::kInt3 ? &int3_ : nullptr;
  SteppedWindow w = StepThreadWindow(tid, state.rip, ctx, wo);
  // Every int3 goes before any thread runs on; threads parked at one meanwhile are resumed
  // by the next drain.
  if (mode_ == StepMode::kInt3) {
    int3_.RemoveAll();
    stats_.int3_writes = int3_.writes();
  }
  stats_.steps += w.single_steps;
  stats_.breakpoint_legs += w.breakpoint_legs;
  stats_.lost_step_traps += w.lost_step_traps;
  if (w.step_trap_owed) threads_[tid].late_step_trap = true;
  if (w.breakpoint_legs > 0) legs_worked_ += w.breakpoint_legs;
  bool ok = false;
  switch (w.end) {
    case WindowEnd::kComplete:
      last_window_complete_ = true;
      ok = true;
      break;
    case WindowEnd::kSyscall:
      ok = true;
      break;
    case WindowEnd::kExited:
      OnExit(tid, w.wait_status);
      ++stats_.aborted_exit;
      return false;  // gone: nothing to resume
    case WindowEnd::kSignal:
      // A signal (or an event) instead of our trap: let the program have it.
      ++stats_.aborted_signal;
      HandleEvent(tid, w.wait_status);
      return true;
    case WindowEnd::kStopLimit:
      ++stats_.aborted_steps;
      break;
    case WindowEnd::kBudget:
      ++stats_.aborted_budget;
      break;
    case WindowEnd::kDecode:
      ++stats_.aborted_decode;
      break;
    case WindowEnd::kPtraceError:
    case WindowEnd::kEmulationEnded:  // not a stepped end
      ++stats_.aborted_ptrace;
      break;
    case WindowEnd::kTrapFlag:
      ++stats_.aborted_trap_flag;  // the thread runs on to the program's own trap
      break;
    case WindowEnd::kTimedOut:
      ++stats_.aborted_timeout;
      OnTimeout();
      break;
  }
  if (w.thread_stopped) {
    if (w.wait_status != 0)
      HandleEvent(tid, w.wait_status);  // stopped for the program's signal: deliver it
    else
      Resume(tid, 0);
  }
  if (ok && !w.events.empty()) *out = std::move(w);
  return true;
}

bool BurstTracer::EmulateWindow(pid_t tid, std::optional<SteppedWindow>* out) {
  emulator::CpuState start;
  SyscallAtStop syscall = SyscallAtStop::kNone;
  if (!ReadCpuState(tid, &start, nullptr, &syscall)) {
    ++stats_.aborted_exit;
    Resume(tid, 0);
    return true;
  }
  if (!ReadyForWindow(tid, syscall, start.rflags)) return true;
  if (!emulated_) emulated_.emplace(options_.pid, options_.window_taken);
  EmulatedWindows::Window w;
  emulated_->Run(tid, start, &w, /*other_threads=*/threads_.size() > 1);
  CountEmulated(w);
  SteppedWindow window = AsSteppedWindow(w.emulated);
  if (window.end == WindowEnd::kComplete) last_window_complete_ = true;
  if (!window.events.empty()) *out = std::move(window);
  if (!options_.verify_emulation) {
    Resume(tid, 0);
    resumed_ns_ = MonotonicNs();
    return true;
  }
  const EmulationCheck check = CheckEmulatedWindow(tid, w, reader_);
  CountCheck(check);
  const SteppedWindow& s = check.stepped;
  stats_.steps += s.single_steps;
  stats_.lost_step_traps += s.lost_step_traps;
  if (s.step_trap_owed) threads_[tid].late_step_trap = true;
  if (s.end == WindowEnd::kExited) {
    OnExit(tid, s.wait_status);
    return false;
  }
  if (s.thread_stopped) {
    if (s.wait_status != 0)
      HandleEvent(tid, s.wait_status);  // stopped for the program's signal: deliver it
    else
      Resume(tid, 0);
  }
  return true;
}

void BurstTracer::CountEmulated(const EmulatedWindows::Window& w) {
  const emulator::EmulatedWindow& e = w.emulated;
  ++stats_.emulated_windows;
  stats_.emulated_instructions += e.instructions;
  stats_.emulation_ns += w.emulate_ns;
  stats_.emulation_pages_read += e.pages_read;
  stats_.emulation_resets = emulated_->resets();
  stats_.emulation_vector_loads = emulated_->stats().vector_loads;
  ++stats_.emulation_ends[static_cast<size_t>(e.end)];
  if (e.mnemonic != 0) ++ending_counts_[{e.mnemonic, static_cast<uint8_t>(e.end)}];
}

void BurstTracer::CountCheck(const EmulationCheck& check) {
  switch (check.verdict) {
    case EmulationCheck::Verdict::kIdentical:
      ++stats_.verified;
      ++stats_.verify_identical;
      if (check.state_differs) {
        ++stats_.verify_state_differs;
        if (stats_.verify_state_differs <= kNotedDifferences)
          Note("emulation check: identical events, registers differ at the end: " + check.detail);
      }
      break;
    case EmulationCheck::Verdict::kDiverged:
      ++stats_.verified;
      ++stats_.verify_diverged;
      if (stats_.verify_diverged <= kNotedDifferences)
        Note("emulation check: window diverged: " + check.detail);
      break;
    case EmulationCheck::Verdict::kNotChecked:
      ++stats_.verify_unchecked;
      break;
  }
}

void BurstTracer::FillEndingInstructions() {
  std::vector<std::pair<uint64_t, std::pair<uint16_t, uint8_t>>> v;
  for (const auto& [key, n] : ending_counts_) v.push_back({n, key});
  const size_t k = std::min(v.size(), kEndingInstructions);
  std::partial_sort(v.begin(), v.begin() + static_cast<long>(k), v.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  stats_.ending_instructions = {};
  for (size_t i = 0; i < k; ++i) {
    stats_.ending_instructions[i].mnemonic = v[i].second.first;
    stats_.ending_instructions[i].reason = v[i].second.second;
    stats_.ending_instructions[i].windows = v[i].first;
  }
}

}  // namespace pathprof::stepping::burst
