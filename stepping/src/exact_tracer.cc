#include "pathprof/stepping/exact_tracer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "exact_block_stepper.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/x86_branch.h"
#include "pathprof/stepping/step_probe.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"
#include "step_classifier.h"
#include "window_stepper.h"

namespace pathprof::stepping {
namespace {

using X86Insn = decoders::X86Instruction;

// The forked child's exit status when it could not ask to be traced.
constexpr int kExitNoPtrace = 126;

// A thread single-stepped this long without a stop has lost its trap for good (a hypervisor
// that clears the trap flag): it is stopped by force and its stream marked discontinuous.
constexpr uint64_t kStepStallNs = 2'000'000'000;
constexpr int kMaxLostTraps = 3;
constexpr uint64_t kLaunchTimeoutNs = 10'000'000'000;
// While the program blocks (a sleep, a read), waits end this often to look for an interrupt.
constexpr uint64_t kWaitSliceNs = 50'000'000;
// Stops per block-stepped window: the single step between two windows then costs nothing
// (1 stop in 4096), and a thread hands the tracer back every ~0.1 s. With other threads
// waiting to be served (a window is stepped while they wait), 64: a thread that spins on a
// lock another holds gives way soon.
constexpr uint64_t kWindowStops = 4096;
constexpr uint64_t kSharedWindowStops = 64;

std::string ErrnoText() {
  return std::strerror(errno);
}

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string path;
};

// Executable mappings of a process, from /proc/PID/maps (none when it cannot be read: the
// process exited, and the next stop says so).
std::vector<Mapping> ReadExecutableMaps(pid_t pid) {
  std::vector<Mapping> out;
  auto space = decoders::ReadProcMaps(pid);
  if (!space.ok()) return out;
  for (const decoders::Mapping& m : space->mappings())
    if (m.executable) out.push_back({m.start, m.end(), m.pgoff, m.path});
  return out;
}

struct ThreadState {
  bool started = false;
  bool async_next = false;  // a caught signal was injected: the next stop is its handler
  uint64_t pending_ip = 0;  // the instruction about to execute
  X86Insn pending;
  bool pending_valid = false;
  uint32_t insns = 0;                  // instructions retired since the last branch's target
  bool forced_stop = false;            // a SIGSTOP of ours is on its way (the step never trapped)
  DebugRegisterCache debug_registers;  // block stepping with breakpoints
  BranchBatch batch;
};

class Tracer {
 public:
  Tracer(const ExactTraceOptions& options, const ExactTraceSink& sink)
      : options_(options), sink_(sink) {}

  ~Tracer() {
    if (child_ > 0 && !child_reaped_) {
      // Failure path: never leave the program stopped or running behind us. PTRACE_O_EXITKILL
      // is set, and SIGKILL ends every thread even mid-stop; reap them (bounded).
      kill(child_, SIGKILL);
      int st;
      while (WaitStop(-1, &st, 1'000'000'000) != StopWait::kGone) {
      }
    }
  }

  Result<ExactTraceStats> Run() {
    WaitTicker ticker;  // bounds every wait below
    PATHPROF_RETURN_IF_ERROR(ChooseMechanism());
    PATHPROF_RETURN_IF_ERROR(Launch());
    PATHPROF_RETURN_IF_ERROR(Loop());
    PATHPROF_RETURN_IF_ERROR(Emit(MetaRecord{"exit_status", std::to_string(stats_.exit_code)}));
    return stats_;
  }

 private:
  // How block steps stop threads, from what the step probe found on a throwaway child
  // (step_probe.h); single steps where the options or the host say so.
  Status ChooseMechanism() {
    if (options_.step_mode == ExactStepMode::kSingleStep) return Status::Ok();
    StepProbeResult probe = CachedStepProbe();
    if (options_.step_mode == ExactStepMode::kBlocks) {
      debug_registers_ = probe.Works(StepMode::kBreakpoints);
      int3_bytes_ = probe.Works(StepMode::kInt3);
      // Debug registers where they fire: they leave the text alone. int3 bytes only where
      // they do not, for a lone thread (int3 bytes are in text every thread runs). int3 was
      // the lone thread's choice where its stop is the cheaper (11 us against 26 us here) until
      // Debian's zstd 1.5.4, traced with it, died of a SIGILL in free() (its I/O threads come
      // and go), where single steps and debug registers traced it to its end: ground truth
      // must not depend on a mechanism that can change the program.
      int3_for_lone_thread_ = !debug_registers_ && int3_bytes_;
    } else {
      const StepMode wanted =
          options_.step_mode == ExactStepMode::kInt3 ? StepMode::kInt3 : StepMode::kBreakpoints;
      if (!probe.Works(wanted))
        return Error(ErrorCode::kUnavailable,
                     "exact trace: step mode " +
                         std::string(ExactStepModeName(options_.step_mode)) +
                         " does not work on this host: " +
                         (probe.ran ? probe.Of(wanted).detail : probe.error) +
                         " (use --step-mode auto or step)");
      debug_registers_ = wanted == StepMode::kBreakpoints;
      int3_bytes_ = int3_for_lone_thread_ = wanted == StepMode::kInt3;
    }
    stats_.mode = int3_for_lone_thread_ ? StepMode::kInt3
                  : debug_registers_    ? StepMode::kBreakpoints
                                        : StepMode::kSingleStep;
    return Status::Ok();
  }

  Status Launch() {
    if (options_.argv.empty())
      return Error(ErrorCode::kInvalidArgument, "exact trace: no command given");
    std::vector<char*> argv;
    for (const auto& a : options_.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    child_ = fork();
    if (child_ < 0)
      return Error(ErrorCode::kResourceExhausted, "exact trace: fork failed: " + ErrnoText());
    if (child_ == 0) {
      if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(kExitNoPtrace);
      raise(SIGSTOP);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    int st = 0;
    if (WaitStop(child_, &st, kLaunchTimeoutNs) == StopWait::kTimedOut)
      return Error(ErrorCode::kInternal, "exact trace: the child did not stop within 10 s");
    if (WIFEXITED(st) && WEXITSTATUS(st) == kExitNoPtrace) {
      child_reaped_ = true;
      return Error(ErrorCode::kPermission,
                   "exact trace: the kernel refused PTRACE_TRACEME (check "
                   "kernel.yama.ptrace_scope, seccomp, or run with CAP_SYS_PTRACE)");
    }
    if (!WIFSTOPPED(st))
      return Error(ErrorCode::kInternal, "exact trace: child did not stop before exec");
    long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
    if (ptrace(PTRACE_SETOPTIONS, child_, nullptr, reinterpret_cast<void*>(opts)) != 0)
      return Error(ErrorCode::kPermission,
                   "exact trace: PTRACE_SETOPTIONS failed: " + ErrnoText() +
                       " (is ptrace allowed here? check kernel.yama.ptrace_scope and seccomp)");
    // Run untraced up to the exec: the forked copy of ourselves is not the program.
    if (ptrace(PTRACE_CONT, child_, nullptr, nullptr) != 0)
      return Error(ErrorCode::kInternal, "exact trace: PTRACE_CONT failed: " + ErrnoText());
    for (;;) {
      if (WaitStop(child_, &st, kLaunchTimeoutNs) != StopWait::kStopped &&
          !(WIFEXITED(st) || WIFSIGNALED(st)))
        return Error(ErrorCode::kInternal,
                     "exact trace: '" + options_.argv[0] + "' did not reach its exec within 10 s");
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        child_reaped_ = true;
        return Error(ErrorCode::kNotFound,
                     "exact trace: could not execute '" + options_.argv[0] + "' (exit status " +
                         std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) +
                         ")");
      }
      if (WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) break;
      int sig = WIFSTOPPED(st) ? WSTOPSIG(st) : 0;
      ptrace(PTRACE_CONT, child_, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    }
    std::string command;
    for (const auto& a : options_.argv) command += (command.empty() ? "" : " ") + a;
    PATHPROF_RETURN_IF_ERROR(Emit(MetaRecord{"command", command}));
    PATHPROF_RETURN_IF_ERROR(
        Emit(MetaRecord{"source", "pathctl trace --exact (ptrace single-step)"}));
    return OnExec(child_);
  }

  Status OnExec(pid_t tid) {
    ++stats_.execs;
    for (auto& [t, state] : threads_) PATHPROF_RETURN_IF_ERROR(Flush(state));
    threads_.clear();
    reader_ = std::make_unique<InstructionReader>(child_);
    if (int3_bytes_) {  // the old text, and our bytes in it, are gone
      int3_ = std::make_unique<SoftwareBreakpoints>(child_);
      reader_->SetBreakpoints(int3_.get());
    }
    known_.clear();
    last_image_ = nullptr;
    PATHPROF_RETURN_IF_ERROR(RefreshMaps());
    ThreadState& t = threads_[tid];
    ++stats_.threads;
    return StartThread(tid, t);
  }

  Status StartThread(pid_t tid, ThreadState& t) {
    t = ThreadState{};
    t.started = true;
    t.batch.pid = static_cast<uint32_t>(child_);
    t.batch.tid = static_cast<uint32_t>(tid);
    t.batch.gap_before = true;
    t.batch.time_ns = MonotonicNs();
    uint64_t rip;
    PATHPROF_RETURN_IF_ERROR(Rip(tid, &rip));
    SetPending(t, rip);
    return Advance(tid, t);
  }

  Status Rip(pid_t tid, uint64_t* rip) {
    if (!ReadRip(tid, rip))
      return Error(ErrorCode::kInternal, "exact trace: reading rip of thread " +
                                             std::to_string(tid) + ": " + ErrnoText());
    return Status::Ok();
  }

  Status Step(pid_t tid, int sig) {
    if (!SingleStepThread(tid, sig)) {
      // The thread may have been killed under us (exit_group from another thread); its exit
      // status arrives through waitpid.
      if (errno == ESRCH) return Status::Ok();
      return Error(ErrorCode::kInternal, "exact trace: PTRACE_SINGLESTEP failed: " + ErrnoText());
    }
    return Status::Ok();
  }

  // Moves a thread on from a stop between instructions, its pending instruction set: by block
  // steps where they serve it, else by one single step.
  Status Advance(pid_t tid, ThreadState& t) {
    if (CanBlockStep(t)) {
      bool handed_on = false;
      PATHPROF_RETURN_IF_ERROR(BlockStep(tid, t, &handed_on));
      if (handed_on) return Status::Ok();
    }
    return Step(tid, 0);
  }

  // The mechanism of the next window, kSingleStep for none. int3 bytes are in text that every
  // thread runs, where a thread single-stepped beside the one block-stepped could meet one: a
  // lone thread only is block-stepped with them.
  StepMode WindowMode() const {
    if (blocks_failed_) return StepMode::kSingleStep;
    if (int3_for_lone_thread_ && threads_.size() == 1) return StepMode::kInt3;
    return debug_registers_ ? StepMode::kBreakpoints : StepMode::kSingleStep;
  }

  bool CanBlockStep(const ThreadState& t) const {
    if (WindowMode() == StepMode::kSingleStep) return false;
    // A system call is stepped (its events: exec, clone, a signal), as is what is undecodable.
    return t.pending_valid && !t.async_next && !t.forced_stop &&
           !(t.pending.is_branch && t.pending.kind == BranchKind::kFarTransfer);
  }

  // One block-stepped window of `tid`, recorded as single steps would have recorded it.
  // *handed_on: the window ended in a stop that was dealt with here (a signal delivered, an
  // exit); else the thread is stopped between instructions for the caller to step.
  Status BlockStep(pid_t tid, ThreadState& t, bool* handed_on) {
    BlockRunOptions o;
    o.mode = WindowMode();
    o.max_stops = threads_.size() > 1 ? kSharedWindowStops : kWindowStops;
    o.stop_timeout_ns = kStepStallNs;
    if (options_.max_steps != 0) {
      // Never past the limit: each stop retires at most kMaxLegInstructions, and the step
      // after the window up to 1 + kMaxLostTraps.
      const uint64_t reserve = 1 + kMaxLostTraps;
      const uint64_t left = options_.max_steps - std::min(options_.max_steps, stats_.instructions);
      if (left < kMaxLegInstructions + reserve) return Status::Ok();  // single steps to the end
      o.max_stops = std::min(o.max_stops, (left - reserve) / kMaxLegInstructions);
    }
    const StepContext context{reader_.get(), &t.debug_registers,
                              o.mode == StepMode::kInt3 ? int3_.get() : nullptr};
    const BlockRun run = RunBlocks(tid, t.pending_ip, context, o);
    // Nothing of ours stays in the text while the program runs what we did not plan: a fork
    // child would copy it, a system call could read it.
    if (int3_) int3_->RemoveAll();
    stats_.breakpoint_legs += run.breakpoint_legs;
    stats_.steps += run.single_steps;
    stats_.lost_step_traps += run.lost_step_traps;
    stats_.instructions += run.instructions;
    for (const BranchEvent& e : run.events) EnsureImageFor(e.from);  // records precede batches
    for (const BranchEvent& e : run.events) {
      t.insns += e.instructions;
      PATHPROF_RETURN_IF_ERROR(Record(t, e.from, e.to, e.kind, e.taken));
    }
    t.insns += run.tail_instructions;
    switch (run.end) {
      case BlockRun::End::kStopped:
      case BlockRun::End::kSignal:
        if (!run.path_known) {
          ++stats_.unknown_paths;
          PATHPROF_RETURN_IF_ERROR(MarkGap(t));
        }
        SetPending(t, run.rip);
        if (run.end == BlockRun::End::kStopped) return Status::Ok();
        *handed_on = true;
        return OnStatus(tid, run.wait_status);  // the program's signal, as a step would meet it
      case BlockRun::End::kExited:
        *handed_on = true;
        return OnExit(tid, run.wait_status);
      case BlockRun::End::kTimedOut:
        // A breakpoint the probe saw fire did not within 2 s: not to be trusted here. Single
        // steps from now on; a thread still running is stopped as a stalled step is.
        blocks_failed_ = true;
        ++stats_.step_timeouts;
        PATHPROF_RETURN_IF_ERROR(MarkGap(t));
        if (!run.thread_stopped) {
          if (syscall(SYS_tgkill, child_, tid, SIGSTOP) == 0) t.forced_stop = true;
          *handed_on = true;
          return Status::Ok();
        }
        return Resynchronize(tid, t, handed_on);
      case BlockRun::End::kLost:  // a ptrace request failed: the thread is likely gone
        PATHPROF_RETURN_IF_ERROR(MarkGap(t));
        return Resynchronize(tid, t, handed_on);
    }
    return Status::Ok();
  }

  // After a window that lost track of a stopped thread: its stream restarts where it stands
  // (the caller steps it), or, where it cannot be read, it is gone and its exit comes through
  // the wait.
  Status Resynchronize(pid_t tid, ThreadState& t, bool* handed_on) {
    DisarmDebugRegisters(tid, &t.debug_registers);
    uint64_t rip = 0;
    if (!ReadRip(tid, &rip)) {
      *handed_on = true;
      return Status::Ok();
    }
    SetPending(t, rip);
    return Status::Ok();
  }

  // What ran since the last event is unknown: the stream restarts after a gap.
  Status MarkGap(ThreadState& t) {
    PATHPROF_RETURN_IF_ERROR(Flush(t));
    t.batch.gap_before = true;
    t.insns = 0;
    return Status::Ok();
  }

  // Decodes the instruction at ip (the reader caches by address: text does not change under
  // us; JIT code that rewrites itself would need invalidation, which this tracer does not
  // attempt).
  void SetPending(ThreadState& t, uint64_t ip) {
    t.pending_ip = ip;
    EnsureImageFor(ip);
    const X86Insn* insn = reader_->At(ip);
    if (insn == nullptr) {
      ++stats_.decode_failures;
      t.pending_valid = false;
      return;
    }
    t.pending = *insn;
    t.pending_valid = true;
  }

  void EnsureImageFor(uint64_t ip) {
    if (last_image_ && ip >= last_image_->start && ip < last_image_->end) return;
    for (const auto& m : known_)
      if (ip >= m.start && ip < m.end) {
        last_image_ = &m;
        return;
      }
    (void)RefreshMaps();
  }

  Status RefreshMaps() {
    ++stats_.maps_reads;
    for (auto& m : ReadExecutableMaps(child_)) {
      bool seen = false;
      for (const auto& k : known_)
        if (k.start == m.start && k.end == m.end && k.path == m.path) seen = true;
      if (seen) continue;
      ImageRecord rec;
      rec.pid = static_cast<uint32_t>(child_);
      rec.start = m.start;
      rec.end = m.end;
      rec.file_offset = m.offset;
      rec.path = m.path;
      ++stats_.images;
      PATHPROF_RETURN_IF_ERROR(Emit(rec));
      known_.push_back(std::move(m));
    }
    last_image_ = nullptr;
    return Status::Ok();
  }

  Status Record(ThreadState& t, uint64_t from, uint64_t to, BranchKind kind, bool taken) {
    BranchEvent e;
    e.from = from;
    e.to = to;
    e.kind = kind;
    e.taken = taken;
    e.instructions = static_cast<uint16_t>(t.insns > 0xffff ? 0xffff : t.insns);
    t.insns = 0;
    t.batch.events.push_back(e);
    ++stats_.branches;
    if (taken) ++stats_.taken;
    if (t.batch.events.size() >= options_.batch_events) return Flush(t);
    return Status::Ok();
  }

  Status Flush(ThreadState& t) {
    if (!t.batch.events.empty()) {
      PATHPROF_RETURN_IF_ERROR(sink_.on_batch ? sink_.on_batch(t.batch) : Status::Ok());
      t.batch.events.clear();
      t.batch.gap_before = false;
    }
    t.batch.time_ns = MonotonicNs();
    return Status::Ok();
  }

  Status OnStep(pid_t tid, ThreadState& t) {
    ++stats_.steps;
    uint64_t rip;
    PATHPROF_RETURN_IF_ERROR(Rip(tid, &rip));
    if (t.async_next) {
      // The injected signal's handler was entered before the pending instruction ran.
      t.async_next = false;
      ++stats_.async_transfers;
      PATHPROF_RETURN_IF_ERROR(Record(t, t.pending_ip, rip, BranchKind::kFarTransfer, true));
    } else if (t.pending_valid) {
      const X86Insn& in = t.pending;
      const uint64_t p = t.pending_ip;
      if (rip == p && !in.is_branch) {
        // Another iteration of a REP string instruction: it retires once, at the end.
      } else {
        ++t.insns;
        ++stats_.instructions;
        const uint64_t next = p + in.length;
        if (in.is_branch) {
          bool taken = in.kind == BranchKind::kConditional ? rip != next : true;
          PATHPROF_RETURN_IF_ERROR(Record(t, p, rip, in.kind, taken));
        } else if (rip != next && ResolveLostTraps(*reader_, in, rip, kMaxLostTraps, &lost_)) {
          // The trap after `in` was lost (an emulated instruction on a quirky hypervisor): the
          // instructions in between are known by decoding, so the stream stays exact.
          ++stats_.lost_step_traps;
          for (const ClassifiedStep& extra : lost_) {
            ++t.insns;
            ++stats_.instructions;
            if (extra.result == StepResult::kBranch)
              PATHPROF_RETURN_IF_ERROR(
                  Record(t, extra.event.from, extra.event.to, extra.event.kind, extra.event.taken));
          }
        } else if (rip != next) {
          ++stats_.unexpected_transfers;
          PATHPROF_RETURN_IF_ERROR(Record(t, p, rip, BranchKind::kFarTransfer, true));
        }
      }
    } else {
      // We could not decode what ran: mark a discontinuity rather than guess.
      PATHPROF_RETURN_IF_ERROR(MarkGap(t));
    }
    SetPending(t, rip);
    return Status::Ok();
  }

  bool HandlerInstalled(pid_t tid, int sig) {
    auto status = procfs::Procfs::Host().ReadStatus(tid);
    return status.ok() && (status->signals_caught >> (sig - 1)) & 1;
  }

  Status Loop() {
    uint64_t quiet_ns = 0;  // since the last stop
    while (!threads_.empty()) {
      if (options_.interrupt && options_.interrupt->load(std::memory_order_relaxed))
        return EndEarly(/*interrupted=*/true);
      if (options_.max_steps && stats_.instructions >= options_.max_steps)
        return EndEarly(/*interrupted=*/false);
      int st = 0;
      pid_t tid = -1;
      const StopWait w = WaitAnyStop(&tid, &st, kWaitSliceNs);
      if (w == StopWait::kGone) break;  // nothing left to trace
      if (w == StopWait::kTimedOut) {
        quiet_ns += kWaitSliceNs;
        if (quiet_ns >= kStepStallNs) {
          StopStalledThreads();
          quiet_ns = 0;
        }
        continue;
      }
      quiet_ns = 0;
      PATHPROF_RETURN_IF_ERROR(OnStatus(tid, st));
    }
    return Status::Ok();
  }

  // Ends the trace before the program ends (the instruction limit, an interrupt): what every
  // thread retired is kept, and the program is killed and reaped, never left behind.
  Status EndEarly(bool interrupted) {
    (interrupted ? stats_.interrupted : stats_.step_limit_hit) = true;
    for (auto& [tid, t] : threads_) PATHPROF_RETURN_IF_ERROR(Flush(t));
    threads_.clear();
    kill(child_, SIGKILL);
    int st;
    pid_t any = -1;
    while (WaitAnyStop(&any, &st, kStepStallNs) != StopWait::kGone) any = -1;
    child_reaped_ = true;
    stats_.exit_code = 128 + SIGKILL;
    if (!interrupted) return Status::Ok();
    return Emit(MetaRecord{"interrupted", "the trace was ended before the program; it was killed"});
  }

  Status OnExit(pid_t tid, int st) {
    auto it = threads_.find(tid);
    if (it != threads_.end()) {
      PATHPROF_RETURN_IF_ERROR(Flush(it->second));
      threads_.erase(it);
    }
    if (tid == child_) {
      stats_.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      child_reaped_ = true;
    }
    return Status::Ok();
  }

  // One stop or exit of a traced thread, as the wait reported it; the thread is moved on.
  Status OnStatus(pid_t tid, int st) {
    if (WIFEXITED(st) || WIFSIGNALED(st)) return OnExit(tid, st);
    if (!WIFSTOPPED(st)) return Status::Ok();
    const int sig = WSTOPSIG(st);
    const int event = st >> 16;
    auto [it, inserted] = threads_.try_emplace(tid);
    ThreadState& t = it->second;
    if (inserted) ++stats_.threads;
    if (event == PTRACE_EVENT_EXEC) return OnExec(tid);
    if (event == PTRACE_EVENT_CLONE) {
      unsigned long new_tid = 0;
      ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &new_tid);
      if (threads_.try_emplace(static_cast<pid_t>(new_tid)).second) ++stats_.threads;
      return Step(tid, 0);
    }
    // A new thread's first stop (its SIGSTOP): start stepping it, swallowing the stop.
    if (!t.started) return StartThread(tid, t);
    if (t.forced_stop && event == 0 && (sig == SIGSTOP || sig == SIGTRAP)) {
      // Our own SIGSTOP for a step or leg that never trapped, or that leg's breakpoint firing
      // at last before it: what ran meanwhile is unknown. (The SIGSTOP still comes after a
      // breakpoint; it is swallowed the same way.)
      if (sig == SIGSTOP) t.forced_stop = false;
      DisarmDebugRegisters(tid, &t.debug_registers);
      PATHPROF_RETURN_IF_ERROR(MarkGap(t));
      uint64_t rip;
      PATHPROF_RETURN_IF_ERROR(Rip(tid, &rip));
      SetPending(t, rip);
      return Step(tid, 0);
    }
    if (sig == SIGTRAP && event == 0) {
      PATHPROF_RETURN_IF_ERROR(OnStep(tid, t));
      return Advance(tid, t);
    }
    if (event != 0) return Step(tid, 0);  // other ptrace events: nothing to record
    // A signal for the program: deliver it. If it runs a handler, the next stop is the
    // handler's first instruction, reached without the pending instruction retiring.
    ++stats_.signals_forwarded;
    if (sig != SIGKILL && sig != SIGSTOP && HandlerInstalled(tid, sig)) t.async_next = true;
    return Step(tid, sig);
  }

  // No stop for kStepStallNs: a thread that is running (not blocked in a system call, where a
  // long wait is normal) was stepped and never trapped. Stop it by force (counted); its stream
  // gets a gap there.
  void StopStalledThreads() {
    for (auto& [tid, t] : threads_) {
      if (!t.started || t.forced_stop) continue;
      auto stat = procfs::Procfs::Host().ReadTaskStat(child_, tid);
      if (!stat.ok() || stat->state != 'R') continue;
      if (syscall(SYS_tgkill, child_, tid, SIGSTOP) == 0) {
        t.forced_stop = true;
        ++stats_.step_timeouts;
      }
    }
  }

  Status Emit(const MetaRecord& m) { return sink_.on_meta ? sink_.on_meta(m) : Status::Ok(); }
  Status Emit(const ImageRecord& m) { return sink_.on_image ? sink_.on_image(m) : Status::Ok(); }

  const ExactTraceOptions& options_;
  const ExactTraceSink& sink_;
  ExactTraceStats stats_;
  pid_t child_ = -1;
  bool child_reaped_ = false;
  std::unordered_map<pid_t, ThreadState> threads_;
  std::unique_ptr<InstructionReader> reader_;
  std::unique_ptr<SoftwareBreakpoints> int3_;  // block stepping with int3 bytes
  bool debug_registers_ = false;               // block steps may use debug registers
  bool int3_bytes_ = false;                    // ... and int3 bytes
  bool int3_for_lone_thread_ = false;          // a lone thread takes int3 (else DR)
  bool blocks_failed_ = false;                 // a breakpoint never fired: single steps since
  std::vector<ClassifiedStep> lost_;
  std::vector<Mapping> known_;
  const Mapping* last_image_ = nullptr;
};

}  // namespace

std::string_view ExactStepModeName(ExactStepMode mode) {
  return WordOf(kExactStepModeWords, mode);
}

bool ParseExactStepMode(std::string_view text, ExactStepMode* out) {
  if (ParseWord(kExactStepModeWords, text, out)) return true;
  StepMode alias;
  if (!ParseWord(kStepModeAliases, text, &alias) || alias != StepMode::kBreakpoints) return false;
  *out = ExactStepMode::kBreakpoints;
  return true;
}

Result<ExactTraceStats> TraceExact(const ExactTraceOptions& options, const ExactTraceSink& sink) {
  Tracer tracer(options, sink);
  return tracer.Run();
}

Result<ExactTraceStats> TraceExactToFile(const ExactTraceOptions& options,
                                         const std::string& pbs_path) {
  PATHPROF_ASSIGN_OR_RETURN(auto writer, PbsWriter::Create(pbs_path));
  PbsWriter& w = writer;
  ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) { return w.Write(b); };
  sink.on_image = [&](const ImageRecord& r) { return w.Write(r); };
  sink.on_meta = [&](const MetaRecord& m) { return w.Write(m); };
  PATHPROF_ASSIGN_OR_RETURN(auto stats, TraceExact(options, sink));
  PATHPROF_RETURN_IF_ERROR(w.Close());
  return stats;
}

}  // namespace pathprof::stepping
