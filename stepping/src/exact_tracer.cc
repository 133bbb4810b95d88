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
#include <sstream>
#include <unordered_map>

#include "pathprof/core/clock.h"
#include "pathprof/decoders/x86_branch.h"
#include "ptrace_primitives.h"
#include "step_classifier.h"

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

std::string ErrnoText() {
  return std::strerror(errno);
}

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string path;
};

// Executable mappings of a process, from /proc/PID/maps.
std::vector<Mapping> ReadExecutableMaps(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    ls >> range >> perms >> offset >> dev >> inode;
    std::getline(ls >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x') continue;
    Mapping m;
    auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    m.offset = std::stoull(offset, nullptr, 16);
    m.path = path;
    out.push_back(std::move(m));
  }
  return out;
}

struct ThreadState {
  bool started = false;
  bool async_next = false;  // a caught signal was injected: the next stop is its handler
  uint64_t pending_ip = 0;  // the instruction about to execute
  X86Insn pending;
  bool pending_valid = false;
  uint32_t insns = 0;        // instructions retired since the last branch's target
  bool forced_stop = false;  // a SIGSTOP of ours is on its way (the step never trapped)
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
    PATHPROF_RETURN_IF_ERROR(Launch());
    PATHPROF_RETURN_IF_ERROR(Loop());
    PATHPROF_RETURN_IF_ERROR(Emit(MetaRecord{"exit_status", std::to_string(stats_.exit_code)}));
    return stats_;
  }

 private:
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
    return Step(tid, 0);
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
      PATHPROF_RETURN_IF_ERROR(Flush(t));
      t.batch.gap_before = true;
      t.insns = 0;
    }
    SetPending(t, rip);
    return Status::Ok();
  }

  bool HandlerInstalled(pid_t tid, int sig) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("SigCgt:", 0) == 0) {
        uint64_t mask = std::stoull(line.substr(7), nullptr, 16);
        return (mask >> (sig - 1)) & 1;
      }
    }
    return false;
  }

  Status Loop() {
    while (!threads_.empty()) {
      if (options_.max_steps && stats_.steps >= options_.max_steps) {
        stats_.step_limit_hit = true;
        for (auto& [tid, t] : threads_) PATHPROF_RETURN_IF_ERROR(Flush(t));
        threads_.clear();
        kill(child_, SIGKILL);
        int st;
        pid_t any = -1;
        while (WaitAnyStop(&any, &st, kStepStallNs) != StopWait::kGone) any = -1;
        child_reaped_ = true;
        stats_.exit_code = 128 + SIGKILL;
        return Status::Ok();
      }
      int st = 0;
      pid_t tid = -1;
      const StopWait w = WaitAnyStop(&tid, &st, kStepStallNs);
      if (w == StopWait::kGone) break;  // nothing left to trace
      if (w == StopWait::kTimedOut) {
        StopStalledThreads();
        continue;
      }
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        auto it = threads_.find(tid);
        if (it != threads_.end()) {
          PATHPROF_RETURN_IF_ERROR(Flush(it->second));
          threads_.erase(it);
        }
        if (tid == child_) {
          stats_.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
          child_reaped_ = true;
        }
        continue;
      }
      if (!WIFSTOPPED(st)) continue;
      const int sig = WSTOPSIG(st);
      const int event = st >> 16;
      auto [it, inserted] = threads_.try_emplace(tid);
      ThreadState& t = it->second;
      if (inserted) ++stats_.threads;
      if (event == PTRACE_EVENT_EXEC) {
        PATHPROF_RETURN_IF_ERROR(OnExec(tid));
        continue;
      }
      if (event == PTRACE_EVENT_CLONE) {
        unsigned long new_tid = 0;
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &new_tid);
        if (threads_.try_emplace(static_cast<pid_t>(new_tid)).second) ++stats_.threads;
        PATHPROF_RETURN_IF_ERROR(Step(tid, 0));
        continue;
      }
      if (!t.started) {
        // A new thread's first stop (its SIGSTOP): start stepping it, swallowing the stop.
        PATHPROF_RETURN_IF_ERROR(StartThread(tid, t));
        continue;
      }
      if (t.forced_stop && event == 0 && sig == SIGSTOP) {
        // Our own SIGSTOP for a step that never trapped: what ran meanwhile is unknown.
        t.forced_stop = false;
        PATHPROF_RETURN_IF_ERROR(Flush(t));
        t.batch.gap_before = true;
        t.insns = 0;
        uint64_t rip;
        PATHPROF_RETURN_IF_ERROR(Rip(tid, &rip));
        SetPending(t, rip);
        PATHPROF_RETURN_IF_ERROR(Step(tid, 0));
        continue;
      }
      if (sig == SIGTRAP && event == 0) {
        PATHPROF_RETURN_IF_ERROR(OnStep(tid, t));
        PATHPROF_RETURN_IF_ERROR(Step(tid, 0));
        continue;
      }
      if (event != 0) {  // other ptrace events: nothing to record
        PATHPROF_RETURN_IF_ERROR(Step(tid, 0));
        continue;
      }
      // A signal for the program: deliver it. If it runs a handler, the next stop is the
      // handler's first instruction, reached without the pending instruction retiring.
      ++stats_.signals_forwarded;
      if (sig != SIGKILL && sig != SIGSTOP && HandlerInstalled(tid, sig)) t.async_next = true;
      PATHPROF_RETURN_IF_ERROR(Step(tid, sig));
    }
    return Status::Ok();
  }

  // No stop for kStepStallNs: a thread that is running (not blocked in a system call, where a
  // long wait is normal) was stepped and never trapped. Stop it by force (counted); its stream
  // gets a gap there.
  void StopStalledThreads() {
    for (auto& [tid, t] : threads_) {
      if (!t.started || t.forced_stop) continue;
      std::ifstream in("/proc/" + std::to_string(child_) + "/task/" + std::to_string(tid) +
                       "/stat");
      std::string stat;
      std::getline(in, stat);
      const size_t paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'R')
        continue;
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
  std::vector<ClassifiedStep> lost_;
  std::vector<Mapping> known_;
  const Mapping* last_image_ = nullptr;
};

}  // namespace

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
