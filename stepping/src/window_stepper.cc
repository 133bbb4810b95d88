#include "window_stepper.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <functional>
#include <span>

#include "pathprof/core/clock.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"

namespace pathprof::stepping {
namespace {

constexpr uint64_t kDr7EnableAll = 0x55;   // L0..L3, execute, length 1
constexpr size_t kMaxWalk = 512;           // instructions predicted per leg
constexpr int kMaxLostTraps = 3;           // instructions a late step may have run unseen
constexpr uint64_t kBudgetCheckEvery = 8;  // stops between clock reads for the budget
static_assert(kMaxWalk == kMaxLegInstructions, "the bound the header promises");

// How many breakpoints a leg may use (the last is the terminal) and whether its own start may
// carry one (the debug registers' resume flag).
struct Capacity {
  size_t targets;
  bool start_reusable;
  // The breakpoints are int3 bytes written into the code: one may not go inside an instruction
  // the leg runs. glibc's free() does `je 1f; lock; 1: cmpxchg`: a multi-threaded process
  // falls through to the lock prefix, and an int3 on the jump's target made it `lock int3`,
  // SIGILL (Debian's zstd died so under the exact tracer on a host without debug registers).
  bool writes_code;
};
Capacity CapacityOf(StepMode mode) {
  return mode == StepMode::kBreakpoints ? Capacity{3, true, false}
                                        : Capacity{7, false, mode == StepMode::kInt3};
}

// The prediction of one leg (see the header). Events are as if every conditional fell through;
// the breakpoint of targets[k] flips events[event_index] to taken.
struct TakenTarget {
  uint64_t address;
  size_t event_index;
};
struct Plan {
  enum class Start : uint8_t { kRun, kSingleStep, kSyscall, kDecode } start = Start::kRun;
  std::vector<BranchEvent> events;
  std::vector<TakenTarget> targets;
  std::vector<uint64_t> runs;  // every address the prediction executes, start first
  uint64_t terminal = 0;
  uint32_t tail_instructions = 0;  // after the last event, before the terminal
};

bool Contains(const std::vector<uint64_t>& v, uint64_t a) {
  return std::find(v.begin(), v.end(), a) != v.end();
}

using CanPlant = std::function<bool(uint64_t)>;

Plan MakePlan(uint64_t start, InstructionReader& reader, uint32_t taken_left, Capacity cap,
              const CanPlant& can_plant) {
  Plan plan;
  std::vector<uint64_t>& executed = plan.runs;
  auto is_target = [&](uint64_t a) {
    return std::any_of(plan.targets.begin(), plan.targets.end(),
                       [a](const TakenTarget& t) { return t.address == a; });
  };
  struct Snapshot {
    size_t events, targets, runs;
    uint32_t n;
  };
  Snapshot before_last{0, 0, 0, 0};
  // Whether `a` falls strictly inside an instruction at `at` (an int3 there would corrupt it).
  auto splits = [&](uint64_t at, uint64_t a) {
    const decoders::X86Instruction* i = reader.At(at);
    return i != nullptr && at < a && a < i->next();
  };
  // Only instructions starting in the 15 bytes before `a` (the longest x86 instruction) can
  // hold it: those are decoded, not every instruction of the leg.
  auto splits_executed = [&](uint64_t a) {
    return cap.writes_code && std::any_of(executed.begin(), executed.end(), [&](uint64_t at) {
             return at < a && a - at < 15 && splits(at, a);
           });
  };
  uint64_t last = 0;
  uint32_t n = 0;  // instructions since the last event
  uint32_t certain_taken = 0;
  uint64_t pos = start;
  // Ends the leg before `last` runs (its effects on the plan undone).
  auto stop_before_last = [&] {
    if (last == start) {  // nothing would run: step the start instruction instead
      plan.start = Plan::Start::kSingleStep;
      return;
    }
    plan.events.resize(before_last.events);
    plan.targets.resize(before_last.targets);
    executed.resize(before_last.runs);
    n = before_last.n;
    plan.terminal = last;
  };
  // Ends the leg at `pos`, or before `last` when no breakpoint can go at `pos`.
  auto end_at = [&](uint64_t at) {
    if (can_plant(at) && !splits_executed(at))
      plan.terminal = at;
    else
      stop_before_last();
  };
  for (;;) {
    const bool first = pos == start && executed.empty();
    if (!first) {
      if (Contains(executed, pos)) {
        // A loop closed. With the resume flag the start runs its first time unhindered, so a
        // breakpoint there fires on the revisit; otherwise stop before the jump back.
        if (pos == start && cap.start_reusable && !is_target(start))
          plan.terminal = start;
        else
          stop_before_last();
        break;
      }
      if (is_target(pos)) {  // falling into a taken target would look like the branch was taken
        stop_before_last();
        break;
      }
      if (executed.size() >= kMaxWalk || certain_taken >= taken_left) {
        end_at(pos);
        break;
      }
    }
    const decoders::X86Instruction* insn = reader.At(pos);
    if (!insn) {
      if (first) {
        plan.start = Plan::Start::kDecode;
      } else if (cap.start_reusable) {
        plan.terminal = pos;  // the next leg starts there and reports the decode failure
      } else {
        stop_before_last();  // never write an int3 over bytes that are not an instruction
      }
      break;
    }
    if (first && !can_plant(pos)) {  // this code takes no int3 (JIT, writable): step it
      plan.start = Plan::Start::kSingleStep;
      break;
    }
    if (insn->is_branch && insn->kind == BranchKind::kFarTransfer) {
      if (first)
        plan.start = Plan::Start::kSyscall;
      else
        end_at(pos);
      break;
    }
    if (insn->is_branch) {
      const bool conditional = insn->kind == BranchKind::kConditional;
      bool plannable = insn->has_direct_target;
      if (plannable && conditional) {
        const uint64_t t = insn->direct_target;
        const bool revisit_ok = cap.start_reusable && t == start;
        plannable = plan.targets.size() < cap.targets && t != insn->next() && !is_target(t) &&
                    (revisit_ok || !Contains(executed, t)) && t != pos && can_plant(t) &&
                    !splits_executed(t) && !(cap.writes_code && splits(pos, t));
      }
      if (!plannable) {
        if (first)
          plan.start = Plan::Start::kSingleStep;
        else
          end_at(pos);
        break;
      }
    }
    // An instruction with a planted target inside it does not run in this leg: the leg ends
    // at it, and the next leg starts there with that int3 gone.
    if (!first && cap.writes_code &&
        std::any_of(plan.targets.begin(), plan.targets.end(),
                    [&](const TakenTarget& t) { return splits(pos, t.address); })) {
      end_at(pos);
      break;
    }
    before_last = Snapshot{plan.events.size(), plan.targets.size(), executed.size(), n};
    last = pos;
    executed.push_back(pos);
    ++n;
    if (!insn->is_branch) {
      pos = insn->next();
      continue;
    }
    BranchEvent e;
    e.from = pos;
    e.kind = insn->kind;
    e.instructions = static_cast<uint16_t>(std::min<uint32_t>(n, 0xffff));
    n = 0;
    if (insn->kind == BranchKind::kConditional) {
      e.to = insn->next();
      e.taken = false;
      plan.targets.push_back({insn->direct_target, plan.events.size()});
      pos = insn->next();
    } else {
      e.to = insn->direct_target;
      e.taken = true;
      ++certain_taken;
      pos = insn->direct_target;
    }
    plan.events.push_back(e);
  }
  plan.tail_instructions = n;
  return plan;
}

bool ArmRegisters(pid_t tid, const std::array<uint64_t, 4>& addresses, DebugRegisterCache* dr) {
  for (int i = 0; i < 4; ++i) {
    if (dr->valid && dr->address[static_cast<size_t>(i)] == addresses[static_cast<size_t>(i)])
      continue;
    if (!PokeDebugRegister(tid, i, addresses[static_cast<size_t>(i)])) {
      dr->valid = false;
      return false;
    }
    dr->address[static_cast<size_t>(i)] = addresses[static_cast<size_t>(i)];
  }
  dr->valid = true;
  if (!dr->armed) {
    if (!PokeDebugRegister(tid, 7, kDr7EnableAll)) return false;
    dr->armed = true;
  }
  return true;
}

bool ArmDebugRegisters(pid_t tid, const std::array<uint64_t, 4>& addresses, DebugRegisterCache* dr,
                       uint64_t* setup_ns) {
  const bool first_use = !dr->valid && !dr->armed;
  const uint64_t t0 = first_use ? MonotonicNs() : 0;
  const bool ok = ArmRegisters(tid, addresses, dr);
  if (first_use) *setup_ns += MonotonicNs() - t0;
  return ok;
}

class WindowBuilder {
 public:
  WindowBuilder(SteppedWindow* out, uint32_t w) : out_(out), w_(w) {}
  bool full() const { return out_->taken >= w_; }
  // Appends one retired branch; `n` instructions ran since the previous appended event.
  void Add(BranchEvent e) {
    if (full()) return;
    const uint32_t n = e.instructions + carry_;
    e.instructions = static_cast<uint16_t>(std::min<uint32_t>(n, 0xffff));
    out_->instructions += n;
    carry_ = 0;
    out_->events.push_back(e);
    if (e.taken) ++out_->taken;
  }
  void AddInstructions(uint32_t n) {
    if (!full()) carry_ += n;
  }
  void Finish() { out_->instructions += carry_; }
  uint64_t retired() const { return out_->instructions + carry_; }

 private:
  SteppedWindow* out_;
  uint32_t w_;
  uint32_t carry_ = 0;
};

// EFLAGS.RF of a stopped thread: what SetResumeFlag set, until an instruction completes.
bool ResumeFlagSet(pid_t tid, bool* set) {
  errno = 0;
  const long flags = ptrace(PTRACE_PEEKUSER, tid,
                            reinterpret_cast<void*>(offsetof(user_regs_struct, eflags)), nullptr);
  if (errno != 0) return false;
  *set = (flags & (1l << 16)) != 0;
  return true;
}

bool IsSigTrapStop(int st) {
  return WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0;
}

class Stepper {
 public:
  Stepper(pid_t tid, const StepContext& ctx, const WindowStepOptions& o, SteppedWindow* out)
      : tid_(tid), ctx_(ctx), o_(o), out_(out), b_(out, o.window_taken) {}

  void Run(uint64_t rip) {
    const uint64_t t0 = o_.budget_ns ? MonotonicNs() : 0;
    bool going = true;
    while (going && !b_.full()) {
      const uint64_t stops = out_->single_steps + out_->breakpoint_legs;
      if (stops >= o_.max_stops) {
        out_->end = WindowEnd::kStopLimit;
        break;
      }
      if (o_.budget_ns && stops % kBudgetCheckEvery == kBudgetCheckEvery - 1 &&
          MonotonicNs() - t0 > o_.budget_ns) {
        out_->end = WindowEnd::kBudget;
        break;
      }
      if (o_.mode == StepMode::kSingleStep) {
        if (o_.max_instructions != 0 && b_.retired() >= o_.max_instructions) break;
        going = SingleStep(&rip);
        continue;
      }
      const Capacity cap = CapacityOf(o_.mode);
      const Plan plan = o_.mode == StepMode::kInt3
                            ? MakePlan(rip, *ctx_.reader, o_.window_taken - out_->taken, cap,
                                       [this](uint64_t a) { return ctx_.int3->Plantable(a); })
                            : MakePlan(rip, *ctx_.reader, o_.window_taken - out_->taken, cap,
                                       [](uint64_t) { return true; });
      switch (plan.start) {
        case Plan::Start::kDecode:
          out_->end = WindowEnd::kDecode;
          going = false;
          break;
        case Plan::Start::kSyscall:
          out_->end = WindowEnd::kSyscall;
          going = false;
          break;
        case Plan::Start::kSingleStep:
          going = SingleStep(&rip);
          break;
        case Plan::Start::kRun:
          going = RunLeg(&rip, plan);
          break;
      }
    }
    b_.Finish();
    if (out_->thread_stopped && o_.mode == StepMode::kBreakpoints && ctx_.debug_registers &&
        !DisarmDebugRegisters(tid_, ctx_.debug_registers) && out_->end == WindowEnd::kComplete)
      out_->end = WindowEnd::kPtraceError;
  }

 private:
  // Waits for the stop a step or leg asked for. False when the window ended (out_->end set).
  bool AwaitStop(int* st) {
    switch (WaitStop(tid_, st, o_.stop_timeout_ns)) {
      case StopWait::kStopped:
        return true;
      case StopWait::kExited:
        out_->end = WindowEnd::kExited;
        out_->wait_status = *st;
        out_->thread_stopped = false;
        return false;
      case StopWait::kGone:
        out_->end = WindowEnd::kPtraceError;
        out_->thread_stopped = false;
        return false;
      case StopWait::kTimedOut:
        Interrupt();
        return false;
    }
    return false;
  }

  // The stop never came: the breakpoint did not fire or the trap was lost. Interrupt the thread
  // and wait (bounded) for it to stop; whatever it stops for is handled here or handed back.
  void Interrupt() {
    out_->end = WindowEnd::kTimedOut;
    out_->step_trap_owed = stepping_;  // until it turns up below
    if (ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0) {
      out_->thread_stopped = false;
      return;
    }
    int st = 0;
    const StopWait w = WaitStop(tid_, &st, o_.stop_timeout_ns);
    if (w == StopWait::kExited) {
      out_->end = WindowEnd::kExited;
      out_->wait_status = st;
      out_->thread_stopped = false;
      return;
    }
    if (w != StopWait::kStopped) {
      out_->thread_stopped = false;  // still running; its interrupt stop comes later
      return;
    }
    if ((st >> 16) == PTRACE_EVENT_STOP) return;  // the interrupt itself
    uint64_t at = 0;
    if (OurTrap(st, &at)) {
      // A late breakpoint or step: ours, so swallow it. The interrupt is still pending and
      // stops the thread again once it runs; the caller's event loop resumes it then.
      if (o_.mode == StepMode::kInt3) WriteRip(tid_, at);
      out_->step_trap_owed = false;
      return;
    }
    out_->wait_status = st;  // the program's own signal: the caller delivers it
  }

  // True when the SIGTRAP stop `st` is one of ours; *at is where the thread is to resume. A
  // single-step trap is ours only while a step of ours is under way: in a leg it is the
  // program's own trap flag (set by a popf the leg ran), and goes to its handler.
  bool OurTrap(int st, uint64_t* at) {
    if (!IsSigTrapStop(st)) return false;
    siginfo_t si{};
    if (!StopSigInfo(tid_, &si) || !ReadRip(tid_, at)) return false;
    if (si.si_code == kTrapTrace) return stepping_;
    if (si.si_code == kTrapHwBkpt) return true;
    if (si.si_code == kTrapInt3 && ctx_.int3 != nullptr && ctx_.int3->OwnsTrap(*at)) {
      *at -= 1;
      return true;
    }
    return false;
  }

  // One PTRACE_SINGLESTEP of the instruction at rip. False when the window ended.
  bool SingleStep(uint64_t* rip) {
    const decoders::X86Instruction* pending = ctx_.reader->At(*rip);
    if (!pending) {
      out_->end = WindowEnd::kDecode;
      return false;
    }
    if (pending->is_branch && pending->kind == BranchKind::kFarTransfer) {
      out_->end = WindowEnd::kSyscall;
      return false;
    }
    if (ctx_.int3 != nullptr) {
      // The step must run the real instruction, and a late trap (lost after an emulated
      // instruction) must not run into an int3 of ours either.
      const decoders::X86Instruction* after = ctx_.reader->At(pending->next());
      const SoftwareBreakpoints::CodeRange clear[2] = {
          {*rip, pending->next()},
          {pending->next(), after != nullptr ? after->next() : pending->next() + 1}};
      ctx_.int3->Update({}, std::span<const SoftwareBreakpoints::CodeRange>(
                                clear, pending->may_be_emulated ? 2 : 1));
    }
    stepping_ = true;
    if (!SingleStepThread(tid_)) {
      out_->end = WindowEnd::kPtraceError;
      return false;
    }
    int st = 0;
    if (!AwaitStop(&st)) return false;
    if (!IsSigTrapStop(st)) {
      out_->end = WindowEnd::kSignal;
      out_->wait_status = st;
      return false;
    }
    ++out_->single_steps;
    uint64_t rflags = 0;
    if (!ReadRipAndFlags(tid_, rip, &rflags)) {
      out_->end = WindowEnd::kPtraceError;
      return false;
    }
    if (rflags & kTrapFlag) {
      // The instruction stepped was the program's own popf (or iret) setting its trap flag: the
      // kernel left the flag the program's, and every trap from here on is the program's, its
      // first after the next instruction. Stepping on would take them as ours (its handler
      // lost 30 traps of a round that way); the window ends and the thread runs on untouched.
      out_->end = WindowEnd::kTrapFlag;
      return false;
    }
    const ClassifiedStep c = ClassifyStep(*pending, *rip);
    if (c.result == StepResult::kUnexpected &&
        ResolveLostTraps(*ctx_.reader, *pending, *rip, kMaxLostTraps, &lost_)) {
      ++out_->lost_step_traps;
      b_.AddInstructions(1);
      for (const ClassifiedStep& extra : lost_) {
        b_.AddInstructions(1);
        if (extra.result == StepResult::kBranch) b_.Add(extra.event);
      }
      return true;
    }
    if (c.result != StepResult::kRepeat) b_.AddInstructions(1);
    if (c.result == StepResult::kBranch || c.result == StepResult::kUnexpected) b_.Add(c.event);
    return true;
  }

  // Plants the leg's breakpoints and lets the thread run to one. False when the window ended.
  bool RunLeg(uint64_t* rip, const Plan& plan) {
    bool armed;
    if (o_.mode == StepMode::kBreakpoints) {
      std::array<uint64_t, 4> a;
      a.fill(plan.terminal);
      for (size_t i = 0; i < plan.targets.size(); ++i) a[i] = plan.targets[i].address;
      armed =
          ArmDebugRegisters(tid_, a, ctx_.debug_registers, &out_->setup_ns) && SetResumeFlag(tid_);
    } else {
      std::vector<uint64_t> plant{plan.terminal};
      for (const TakenTarget& t : plan.targets) plant.push_back(t.address);
      std::vector<SoftwareBreakpoints::CodeRange> runs;
      runs.reserve(plan.runs.size());
      for (uint64_t r : plan.runs) {
        const decoders::X86Instruction* insn = ctx_.reader->At(r);
        runs.push_back({r, insn != nullptr ? insn->next() : r + 1});
      }
      armed = ctx_.int3->Update(plant, runs);
    }
    stepping_ = false;
    if (!armed || ptrace(PTRACE_CONT, tid_, nullptr, nullptr) != 0) {
      out_->end = WindowEnd::kPtraceError;
      return false;
    }
    int st = 0;
    if (!AwaitStop(&st)) return false;
    uint64_t at = 0;
    if (!OurTrap(st, &at) || (o_.mode == StepMode::kInt3 && !ctx_.int3->planted(at))) {
      out_->end = WindowEnd::kSignal;  // the program's own signal (its own int3 included)
      out_->wait_status = st;
      if (o_.account_interrupted_legs) AddInterruptedLeg(plan);
      return false;
    }
    if (o_.mode == StepMode::kInt3 && !WriteRip(tid_, at)) {
      out_->end = WindowEnd::kPtraceError;
      return false;
    }
    ++out_->breakpoint_legs;
    *rip = at;
    for (const TakenTarget& t : plan.targets) {
      if (t.address != at) continue;
      for (size_t i = 0; i < t.event_index; ++i) b_.Add(plan.events[i]);
      BranchEvent e = plan.events[t.event_index];
      e.taken = true;
      e.to = t.address;
      b_.Add(e);
      return true;
    }
    if (at != plan.terminal) {
      out_->end = WindowEnd::kPtraceError;  // cannot happen: addresses are distinct by design
      return false;
    }
    for (const BranchEvent& e : plan.events) b_.Add(e);
    b_.AddInstructions(plan.tail_instructions);
    return true;
  }

  // A stop of the program's own in the middle of a leg (account_interrupted_legs): where the
  // thread stands says how far the leg ran, its addresses being distinct and none of them a
  // target or the terminal (MakePlan), except its start under kBreakpoints where a target or
  // the terminal is the start too: back there after a turn of a loop looks the same as not
  // having left it.
  void AddInterruptedLeg(const Plan& plan) {
    uint64_t at = 0;
    if (!ReadRip(tid_, &at) || plan.runs.empty()) {
      out_->interrupted_leg_unknown = true;
      return;
    }
    const uint64_t start = plan.runs.front();
    for (const TakenTarget& t : plan.targets) {
      if (t.address != at || at == start) continue;
      for (size_t i = 0; i < t.event_index; ++i) b_.Add(plan.events[i]);
      BranchEvent e = plan.events[t.event_index];
      e.taken = true;
      e.to = t.address;
      b_.Add(e);  // the breakpoint at its target had not fired yet
      return;
    }
    if (at == plan.terminal && at != start) {
      for (const BranchEvent& e : plan.events) b_.Add(e);
      b_.AddInstructions(plan.tail_instructions);
      return;
    }
    const auto it = std::find(plan.runs.begin(), plan.runs.end(), at);
    if (it == plan.runs.end()) {
      out_->interrupted_leg_unknown = true;
      return;
    }
    const size_t ran = static_cast<size_t>(it - plan.runs.begin());  // instructions retired
    if (ran == 0) {
      const auto back = std::find_if(plan.targets.begin(), plan.targets.end(),
                                     [at](const TakenTarget& t) { return t.address == at; });
      if (back == plan.targets.end() && at != plan.terminal) return;  // nothing ran
      // It may have run a turn back to its start. The resume flag tells: set for the leg, the
      // CPU clears it once an instruction completes; still set, nothing ran (a signal that was
      // pending when the leg began is delivered before any instruction runs).
      bool rf = false;
      if (!ResumeFlagSet(tid_, &rf)) {
        out_->interrupted_leg_unknown = true;
      } else if (!rf) {
        const size_t through = back != plan.targets.end() ? back->event_index : plan.events.size();
        for (size_t i = 0; i < through; ++i) b_.Add(plan.events[i]);
        if (back != plan.targets.end()) {
          BranchEvent e = plan.events[back->event_index];
          e.taken = true;
          e.to = at;
          b_.Add(e);
        } else {
          b_.AddInstructions(plan.tail_instructions);
        }
      }
      return;
    }
    size_t counted = 0;  // instructions up to the last event that ran
    for (const BranchEvent& e : plan.events) {
      const auto from = std::find(plan.runs.begin(), plan.runs.end(), e.from);
      if (static_cast<size_t>(from - plan.runs.begin()) >= ran) break;
      b_.Add(e);
      counted += e.instructions;
    }
    b_.AddInstructions(static_cast<uint32_t>(ran - counted));
  }

  const pid_t tid_;
  const StepContext& ctx_;
  const WindowStepOptions& o_;
  SteppedWindow* out_;
  WindowBuilder b_;
  std::vector<ClassifiedStep> lost_;
  bool stepping_ = false;  // the thread was last let go with a single step, not a leg
};

}  // namespace

std::string_view WindowEndName(WindowEnd end) {
  switch (end) {
    case WindowEnd::kComplete:
      return "complete";
    case WindowEnd::kSyscall:
      return "syscall";
    case WindowEnd::kSignal:
      return "signal";
    case WindowEnd::kExited:
      return "exited";
    case WindowEnd::kStopLimit:
      return "stop-limit";
    case WindowEnd::kBudget:
      return "budget";
    case WindowEnd::kDecode:
      return "decode";
    case WindowEnd::kPtraceError:
      return "ptrace-error";
    case WindowEnd::kTimedOut:
      return "timed-out";
    case WindowEnd::kEmulationEnded:
      return "emulation-ended";
    case WindowEnd::kTrapFlag:
      return "trap-flag";
  }
  return "?";
}

bool DisarmDebugRegisters(pid_t tid, DebugRegisterCache* dr) {
  if (!dr->armed) return true;
  if (!PokeDebugRegister(tid, 7, 0)) return false;
  dr->armed = false;
  return true;
}

SteppedWindow StepThreadWindow(pid_t tid, uint64_t rip, const StepContext& context,
                               const WindowStepOptions& options) {
  SteppedWindow out;
  if (options.mode == StepMode::kEmulate) {  // not stepped: emulated_windows.h
    out.end = WindowEnd::kPtraceError;
    return out;
  }
  Stepper stepper(tid, context, options, &out);
  stepper.Run(rip);
  return out;
}

}  // namespace pathprof::stepping
