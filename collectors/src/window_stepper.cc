#include "pathprof/collectors/window_stepper.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <ctime>

namespace pathprof::collectors {
namespace {

constexpr uint64_t kResumeFlag = 1ull << 16;  // EFLAGS.RF: skip instruction breakpoints once
constexpr uint64_t kDr7EnableAll = 0x55;      // L0..L3, execute, length 1
constexpr size_t kMaxTakenTargets = 3;        // the 4th register is the terminal
constexpr size_t kMaxWalk = 512;              // instructions predicted per leg
#ifndef TRAP_HWBKPT
constexpr int TRAP_HWBKPT = 4;
#endif

long DrOffset(int i) {
  return static_cast<long>(offsetof(struct user, u_debugreg) +
                           static_cast<size_t>(i) * sizeof(long));
}

bool PokeDr(pid_t tid, int i, uint64_t value) {
  return ptrace(PTRACE_POKEUSER, tid, reinterpret_cast<void*>(DrOffset(i)),
                reinterpret_cast<void*>(value)) == 0;
}

bool ReadRip(pid_t tid, uint64_t* rip) {
  errno = 0;
  long v = ptrace(PTRACE_PEEKUSER, tid, reinterpret_cast<void*>(offsetof(user_regs_struct, rip)),
                  nullptr);
  if (errno != 0) return false;
  *rip = static_cast<uint64_t>(v);
  return true;
}

bool SetResumeFlag(pid_t tid) {
  const auto off = reinterpret_cast<void*>(offsetof(user_regs_struct, eflags));
  errno = 0;
  long v = ptrace(PTRACE_PEEKUSER, tid, off, nullptr);
  if (errno != 0) return false;
  return ptrace(PTRACE_POKEUSER, tid, off,
                reinterpret_cast<void*>(static_cast<uint64_t>(v) | kResumeFlag)) == 0;
}

bool WaitFor(pid_t tid, int* st) {
  for (;;) {
    pid_t r = waitpid(tid, st, __WALL);
    if (r == tid) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

// The prediction of one leg (see the header). Events are as if every conditional fell through;
// the breakpoint of taken_targets[k] flips events[event_index] to taken.
struct TakenTarget {
  uint64_t address;
  size_t event_index;
};
struct Plan {
  enum class Start : uint8_t { kRun, kSingleStep, kSyscall, kDecode } start = Start::kRun;
  std::vector<BranchEvent> events;
  std::vector<TakenTarget> targets;
  uint64_t terminal = 0;
  uint32_t tail_instructions = 0;  // after the last event, before the terminal
};

bool Contains(const std::vector<uint64_t>& v, uint64_t a) {
  return std::find(v.begin(), v.end(), a) != v.end();
}

Plan MakePlan(uint64_t start, InstructionReader& reader, uint32_t taken_left) {
  Plan plan;
  std::vector<uint64_t> executed;  // addresses the prediction runs, in order (start first)
  auto is_target = [&](uint64_t a) {
    return std::any_of(plan.targets.begin(), plan.targets.end(),
                       [a](const TakenTarget& t) { return t.address == a; });
  };
  struct Snapshot {
    size_t events, targets;
    uint32_t n;
  };
  Snapshot before_last{0, 0, 0};
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
    n = before_last.n;
    plan.terminal = last;
  };
  for (;;) {
    const bool first = pos == start && executed.empty();
    if (!first) {
      if (Contains(executed, pos)) {
        // A loop closed. The start runs its first time with RF set, so a breakpoint there
        // fires on the revisit; any other address already ran, so stop before the jump back.
        if (pos == start && !is_target(start))
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
        plan.terminal = pos;
        break;
      }
    }
    const decoders::X86Instruction* insn = reader.At(pos);
    if (!insn) {
      if (first) plan.start = Plan::Start::kDecode;
      plan.terminal = pos;  // the next leg starts there and reports the decode failure
      break;
    }
    if (insn->is_branch && insn->kind == BranchKind::kFarTransfer) {
      if (first) plan.start = Plan::Start::kSyscall;
      plan.terminal = pos;
      break;
    }
    if (insn->is_branch) {
      const bool conditional = insn->kind == BranchKind::kConditional;
      bool plannable = insn->has_direct_target;
      if (plannable && conditional) {
        const uint64_t t = insn->direct_target;
        plannable = plan.targets.size() < kMaxTakenTargets && t != insn->next() && !is_target(t) &&
                    (t == start || !Contains(executed, t)) && t != pos;
      }
      if (!plannable) {
        if (first)
          plan.start = Plan::Start::kSingleStep;
        else
          plan.terminal = pos;
        break;
      }
    }
    before_last = Snapshot{plan.events.size(), plan.targets.size(), n};
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

}  // namespace

std::string_view StepModeName(StepMode mode) {
  return mode == StepMode::kBreakpoints ? "breakpoints" : "step";
}

bool ParseStepMode(std::string_view text, StepMode* out) {
  if (text == "step") {
    *out = StepMode::kSingleStep;
    return true;
  }
  if (text == "breakpoints") {
    *out = StepMode::kBreakpoints;
    return true;
  }
  return false;
}

bool DisarmDebugRegisters(pid_t tid, DebugRegisterCache* dr) {
  if (!dr->armed) return true;
  if (!PokeDr(tid, 7, 0)) return false;
  dr->armed = false;
  return true;
}

namespace {

bool ArmRegisters(pid_t tid, const std::array<uint64_t, 4>& addresses, DebugRegisterCache* dr);

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool Arm(pid_t tid, const std::array<uint64_t, 4>& addresses, DebugRegisterCache* dr,
         uint64_t* setup_ns) {
  const bool first_use = !dr->valid && !dr->armed;
  const uint64_t t0 = first_use ? MonotonicNs() : 0;
  const bool ok = ArmRegisters(tid, addresses, dr);
  if (first_use) *setup_ns += MonotonicNs() - t0;
  return ok;
}

bool ArmRegisters(pid_t tid, const std::array<uint64_t, 4>& addresses, DebugRegisterCache* dr) {
  for (int i = 0; i < 4; ++i) {
    if (dr->valid && dr->address[static_cast<size_t>(i)] == addresses[static_cast<size_t>(i)])
      continue;
    if (!PokeDr(tid, i, addresses[static_cast<size_t>(i)])) {
      dr->valid = false;
      return false;
    }
    dr->address[static_cast<size_t>(i)] = addresses[static_cast<size_t>(i)];
  }
  dr->valid = true;
  if (!dr->armed) {
    if (!PokeDr(tid, 7, kDr7EnableAll)) return false;
    dr->armed = true;
  }
  return true;
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

 private:
  SteppedWindow* out_;
  uint32_t w_;
  uint32_t carry_ = 0;
};

// One PTRACE_SINGLESTEP of the instruction at rip. False when the window ended (out->end set).
bool SingleStep(pid_t tid, uint64_t* rip, InstructionReader& reader, SteppedWindow* out,
                WindowBuilder* b) {
  const decoders::X86Instruction* pending = reader.At(*rip);
  if (!pending) {
    out->end = WindowEnd::kDecode;
    return false;
  }
  if (pending->is_branch && pending->kind == BranchKind::kFarTransfer) {
    out->end = WindowEnd::kSyscall;
    return false;
  }
  if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr) != 0) {
    out->end = WindowEnd::kPtraceError;
    return false;
  }
  int st = 0;
  if (!WaitFor(tid, &st) || WIFEXITED(st) || WIFSIGNALED(st)) {
    out->end = WindowEnd::kExited;
    out->wait_status = st;
    return false;
  }
  if (!(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0)) {
    out->end = WindowEnd::kSignal;
    out->wait_status = st;
    return false;
  }
  ++out->single_steps;
  if (!ReadRip(tid, rip)) {
    out->end = WindowEnd::kPtraceError;
    return false;
  }
  ClassifiedStep c = ClassifyStep(*pending, *rip);
  if (c.result != StepResult::kRepeat) b->AddInstructions(1);
  if (c.result == StepResult::kBranch || c.result == StepResult::kUnexpected) b->Add(c.event);
  return true;
}

// Runs one planned leg. False when the window ended (out->end set).
bool RunLeg(pid_t tid, uint64_t* rip, const Plan& plan, SteppedWindow* out, WindowBuilder* b,
            DebugRegisterCache* dr) {
  std::array<uint64_t, 4> a;
  a.fill(plan.terminal);
  for (size_t i = 0; i < plan.targets.size(); ++i) a[i] = plan.targets[i].address;
  if (!Arm(tid, a, dr, &out->setup_ns) || !SetResumeFlag(tid) ||
      ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) {
    out->end = WindowEnd::kPtraceError;
    return false;
  }
  int st = 0;
  if (!WaitFor(tid, &st) || WIFEXITED(st) || WIFSIGNALED(st)) {
    out->end = WindowEnd::kExited;
    out->wait_status = st;
    return false;
  }
  siginfo_t si{};
  if (!(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0) ||
      ptrace(PTRACE_GETSIGINFO, tid, nullptr, &si) != 0 || si.si_code != TRAP_HWBKPT) {
    out->end = WindowEnd::kSignal;  // the program's own signal (an int3 is SIGTRAP too)
    out->wait_status = st;
    return false;
  }
  ++out->breakpoint_legs;
  if (!ReadRip(tid, rip)) {
    out->end = WindowEnd::kPtraceError;
    return false;
  }
  for (const TakenTarget& t : plan.targets) {
    if (t.address != *rip) continue;
    for (size_t i = 0; i < t.event_index; ++i) b->Add(plan.events[i]);
    BranchEvent e = plan.events[t.event_index];
    e.taken = true;
    e.to = t.address;
    b->Add(e);
    return true;
  }
  if (*rip != plan.terminal) {
    out->end = WindowEnd::kPtraceError;  // cannot happen: addresses are distinct by design
    return false;
  }
  for (const BranchEvent& e : plan.events) b->Add(e);
  b->AddInstructions(plan.tail_instructions);
  return true;
}

}  // namespace

SteppedWindow StepThreadWindow(pid_t tid, uint64_t rip, InstructionReader& reader,
                               const WindowStepOptions& options, DebugRegisterCache* dr) {
  SteppedWindow out;
  WindowBuilder b(&out, options.window_taken);
  bool going = true;
  while (going && !b.full()) {
    if (out.single_steps + out.breakpoint_legs >= options.max_stops) {
      out.end = WindowEnd::kStopLimit;
      break;
    }
    if (options.mode == StepMode::kSingleStep) {
      going = SingleStep(tid, &rip, reader, &out, &b);
      continue;
    }
    const Plan plan = MakePlan(rip, reader, options.window_taken - out.taken);
    switch (plan.start) {
      case Plan::Start::kDecode:
        out.end = WindowEnd::kDecode;
        going = false;
        break;
      case Plan::Start::kSyscall:
        out.end = WindowEnd::kSyscall;
        going = false;
        break;
      case Plan::Start::kSingleStep:
        going = SingleStep(tid, &rip, reader, &out, &b);
        break;
      case Plan::Start::kRun:
        going = RunLeg(tid, &rip, plan, &out, &b, dr);
        break;
    }
  }
  b.Finish();
  if (out.end != WindowEnd::kExited && !DisarmDebugRegisters(tid, dr) &&
      out.end == WindowEnd::kComplete)
    out.end = WindowEnd::kPtraceError;
  return out;
}

}  // namespace pathprof::collectors
