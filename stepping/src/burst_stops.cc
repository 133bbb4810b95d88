// Every stop of a traced thread that is not part of a window: the program's signals, traps
// that are ours (late steps, breakpoints given up, int3 parking), clones, forks, exec, exits;
// and the detach of every thread at the end.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "burst_tracer_impl.h"
#include "burst_wire.h"
#include "pathprof/core/procfs.h"

namespace pathprof::stepping::burst {

void BurstTracer::DrainEvents() {
  int st;
  pid_t tid;
  uint64_t t0 = 0;
  uint64_t charged = 0;
  while ((tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
    if (t0 == 0) t0 = MonotonicNs();
    if (HandleEvent(tid, st)) ++charged;
  }
  if (charged == 0) return;
  const uint64_t t1 = MonotonicNs();
  // Each stopped thread waited for the drain and paid a stop's own cost.
  ChargeEventStops(charged, charged * stop_cost_ns_ + charged * (t1 - t0), t1);
}

void BurstTracer::ChargeEventStops(uint64_t count, uint64_t ns, uint64_t now) {
  stats_.event_stops += count;
  stats_.event_stopped_ns += ns;
  stats_.stopped_ns += ns;
  window_.Add(now, ns);
  event_window_.Add(now, ns);
}

void BurstTracer::OnExit(pid_t tid, int st) {
  if (threads_.erase(tid)) ++stats_.threads_exited;
  guests_.erase(tid);
  if (tid == options_.pid) {
    // The leader is reported last, once every thread is gone: the process has exited.
    stats_.target_exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    stats_.threads_exited += threads_.size();
    threads_.clear();
  }
  if (threads_.empty()) stats_.target_exited = true;
}

void BurstTracer::Resume(pid_t tid, int sig) {
  // ESRCH: killed under us; its exit status arrives through waitpid.
  ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
}

bool BurstTracer::SwallowOurTrap(pid_t tid, bool late_step_possible) {
  siginfo_t si{};
  uint64_t rip = 0;
  if (!StopSigInfo(tid, &si)) return false;
  // Only debug registers raise TRAP_HWBKPT, and only a tracer sets them (a program's own icebp
  // is TRAP_BRKPT): ours, whenever it comes.
  if (si.si_code == kTrapHwBkpt) return true;
  // TRAP_TRACE is the trap flag's: a step of ours only when one is still unanswered; otherwise
  // the program set the flag itself (pushf/popf) and its handler counts on the trap.
  if (si.si_code == kTrapTrace) return late_step_possible;
  if (si.si_code == kTrapInt3 && ReadRip(tid, &rip) && int3_.OwnsTrap(rip)) {
    WriteRip(tid, rip - 1);
    ++stats_.int3_parked;
    return true;
  }
  return false;
}

void BurstTracer::ForwardSignal(pid_t tid, int sig) {
  ++stats_.signals_forwarded;
  if (sig == SIGTRAP) ++stats_.traps_forwarded;
  Resume(tid, sig);
}

void BurstTracer::SettleInterruptStop(pid_t tid) {
  SyscallRestart restart = SyscallRestart::kFailed;
  if (SettleSyscallAtInterrupt(options_.pid, tid, &restart) == SyscallAtStop::kInterrupted)
    CountRestart(restart);
}

void BurstTracer::CountRestart(SyscallRestart restart) {
  if (restart == SyscallRestart::kRestarted)
    ++stats_.syscalls_restarted;
  else
    ++stats_.syscalls_left_interrupted;
}

bool BurstTracer::HandleEvent(pid_t tid, int st) {
  if (WIFEXITED(st) || WIFSIGNALED(st)) {
    OnExit(tid, st);
    return false;
  }
  if (!WIFSTOPPED(st)) return false;
  if (guests_.count(tid) || (!threads_.count(tid) && IsOtherProcess(tid)))
    return HandleGuest(tid, st);
  const int sig = WSTOPSIG(st);
  const int event = st >> 16;
  if (threads_.emplace(tid, Thread{}).second) {
    ++stats_.threads_attached;   // attached at birth (PTRACE_O_TRACECLONE): its first stop
    threads_[tid].options = -1;  // inherited from its creator; set ours below
  }
  Thread& t = threads_[tid];
  // A leg given up with its debug registers armed: disarm at the first chance.
  if (t.debug_registers.armed) DisarmDebugRegisters(tid, &t.debug_registers);
  UpdateOptions(tid, t);  // after a change of mode, each thread at its next stop
  switch (event) {
    case PTRACE_EVENT_CLONE: {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
      // Its exit may have been reaped before this event: never remember a thread that is gone
      // (the loop ends when no thread is left).
      if (child != 0 && syscall(SYS_tgkill, options_.pid, child, 0) == 0 &&
          threads_.emplace(static_cast<pid_t>(child), Thread{}).second) {
        ++stats_.threads_attached;
        threads_[static_cast<pid_t>(child)].options = -1;
      }
      Resume(tid, 0);
      return true;
    }
    case PTRACE_EVENT_EXEC:
      OnExec();
      Resume(tid, 0);
      return true;
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK: {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
      if (child != 0) {
        Guest& g = guests_[static_cast<pid_t>(child)];
        g.kind = event == PTRACE_EVENT_VFORK ? Guest::Kind::kVfork : Guest::Kind::kFork;
        if (g.stopped_waiting) SettleGuest(static_cast<pid_t>(child), g.pending_signal);
      }
      Resume(tid, 0);
      return true;
    }
    case PTRACE_EVENT_STOP:
      if (IsGroupStopSignal(sig)) {
        // Job control: stay stopped until SIGCONT, as without us.
        ++stats_.group_stops;
        t.group_stopped = true;
        ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
        return false;
      }
      // An interrupt we no longer wait for (or the end of a job-control stop, whose EINTR is
      // the program's as it would be untraced).
      if (!t.group_stopped) SettleInterruptStop(tid);
      t.group_stopped = false;
      Resume(tid, 0);
      return true;
    case 0: {
      // A step trap of ours still owed comes at the thread's first signal stop, if at all.
      const bool late_step = std::exchange(t.late_step_trap, false);
      if (sig == SIGTRAP && SwallowOurTrap(tid, late_step)) {
        Resume(tid, 0);
        return true;
      }
      // Signal-delivery stop: the program's signal; hand it back.
      ForwardSignal(tid, sig);
      return true;
    }
    default:
      Resume(tid, 0);
      return true;
  }
}

bool BurstTracer::IsOtherProcess(pid_t tid) const {
  auto status = procfs::Procfs::Host().ReadStatus(tid);
  return !status.ok() || status->tgid != options_.pid;
}

bool BurstTracer::HandleGuest(pid_t tid, int st) {
  Guest& g = guests_[tid];
  const int event = st >> 16;
  const int sig = event == 0 ? WSTOPSIG(st) : 0;
  if (event == PTRACE_EVENT_EXEC) {  // a vfork child exec'd: its memory is its own now
    ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
    guests_.erase(tid);
    return true;
  }
  if (sig == SIGTRAP && SwallowOurTrap(tid, /*late_step_possible=*/false)) {
    Resume(tid, 0);
    return true;
  }
  if (g.kind == Guest::Kind::kUnknown) {
    g.stopped_waiting = true;  // its parent's fork event will say what it is
    g.pending_signal = sig;
    return true;
  }
  SettleGuest(tid, sig);
  return true;
}

void BurstTracer::SettleGuest(pid_t tid, int sig) {
  Guest& g = guests_[tid];
  if (g.kind == Guest::Kind::kFork) {
    if (int3_.CleanChild(tid) > 0) ++stats_.forks_cleaned;
    ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    guests_.erase(tid);
  } else {
    g.stopped_waiting = false;
    Resume(tid, sig);
  }
}

void BurstTracer::OnExec() {
  ++stats_.execs;
  reader_.Reset();  // new images: cached instructions are stale
  if (emulated_) emulated_->Reset();
  int3_.ForgetAll();
  // exec leaves one thread, with the process id; the others are gone, and exec clears
  // debug registers.
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->first != options_.pid) {
      ++stats_.threads_exited;
      it = threads_.erase(it);
    } else {
      it->second.debug_registers = DebugRegisterCache{};
      it->second.stat_fd = decoders::UniqueFd();
      ++it;
    }
  }
  threads_.emplace(options_.pid, Thread{});
  Note("process " + std::to_string(options_.pid) + " exec'd: images changed");  // flushes
  wire::Send(data_fd_, wire::Type::kExec, nullptr, 0);
}

void BurstTracer::DetachAll() {
  WaitTicker ticker(2000);
  int3_.RemoveAll();
  std::unordered_map<pid_t, bool> pending;
  for (const auto& [tid, t] : threads_)
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) pending[tid] = true;
  for (const auto& [tid, g] : guests_)
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0 || g.stopped_waiting)
      pending[tid] = true;
  const uint64_t deadline = MonotonicNs() + kDetachBudgetNs;
  while (!pending.empty()) {
    int st = 0;
    const pid_t tid = waitpid(-1, &st, __WALL);
    if (tid < 0) {
      if (errno == EINTR && MonotonicNs() < deadline) continue;
      break;  // ECHILD: nothing left traced; or out of time
    }
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      pending.erase(tid);
      if (tid == options_.pid)
        stats_.target_exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      continue;
    }
    if (!WIFSTOPPED(st)) continue;
    const int event = st >> 16;
    int sig = 0;
    auto it = threads_.find(tid);
    if (event == 0) {
      sig = WSTOPSIG(st);
      const bool late_step = it != threads_.end() && it->second.late_step_trap;
      if (sig == SIGTRAP && SwallowOurTrap(tid, late_step)) {
        sig = 0;
      } else {
        ++stats_.signals_forwarded;  // deliver it on the way out
        if (sig == SIGTRAP) ++stats_.traps_forwarded;
      }
    }
    // Our interrupt woke it from a system call that would return EINTR: restart it.
    if (event == PTRACE_EVENT_STOP && !IsGroupStopSignal(WSTOPSIG(st)) && it != threads_.end())
      SettleInterruptStop(tid);
    if (it != threads_.end()) DisarmDebugRegisters(tid, &it->second.debug_registers);
    if (auto g = guests_.find(tid); g != guests_.end() && g->second.kind != Guest::Kind::kVfork)
      int3_.CleanChild(tid);
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
      if (child) pending[static_cast<pid_t>(child)] = true;  // auto-attached: detach it too
    }
    ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    pending.erase(tid);
  }
  threads_.clear();
  guests_.clear();
}

}  // namespace pathprof::stepping::burst
