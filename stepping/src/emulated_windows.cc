#include "emulated_windows.h"

#include <sys/ptrace.h>
#include <sys/user.h>

#include <cstdio>

#include "pathprof/core/clock.h"

namespace pathprof::stepping {
namespace {

emulator::EmulatorLimits LimitsFor(uint32_t window_taken) {
  emulator::EmulatorLimits l;
  l.window_taken = window_taken;
  // A window takes 10-100 us in a release build here, up to 2.3 ms in the sanitizer build on a
  // loaded host; one that takes 5 ms has lost the tracer's CPU, and the thread would wait on.
  l.max_ns = 5'000'000;
  return l;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Describe(const BranchEvent& e) {
  return Hex(e.from) + "->" + Hex(e.to) + (e.taken ? " taken" : " not taken") + ", " +
         std::to_string(e.instructions) + " instructions";
}

// Flags every x86-64 core defines after the instructions compilers emit (CF, PF, ZF, SF, OF,
// DF); AF and the "undefined" results of a few instructions differ between vendors.
constexpr uint64_t kComparedFlags = 0x1 | 0x4 | 0x40 | 0x80 | 0x400 | 0x800;

constexpr const char* kGprNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                       "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

// Where the real thread's registers differ from the emulated end state, or "".
std::string StateDifference(pid_t tid, const emulator::CpuState& emulated) {
  emulator::CpuState real;
  if (!ReadCpuState(tid, &real)) return "";
  std::string out;
  auto add = [&](const char* name, uint64_t want, uint64_t got) {
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + Hex(got) + " (emulated " +
           Hex(want) + ")";
  };
  for (int i = 0; i < 16; ++i)
    if (real.gpr[i] != emulated.gpr[i]) add(kGprNames[i], emulated.gpr[i], real.gpr[i]);
  if (real.rip != emulated.rip) add("rip", emulated.rip, real.rip);
  if ((real.rflags & kComparedFlags) != (emulated.rflags & kComparedFlags))
    add("rflags", emulated.rflags, real.rflags);
  return out;
}

}  // namespace

EmulatedWindows::EmulatedWindows(pid_t pid, uint32_t window_taken)
    : pages_(pid), emulator_(LimitsFor(window_taken)) {}

void EmulatedWindows::Reset() {
  pages_.Reset();
  emulator_.Reset();
}

void EmulatedWindows::Run(pid_t tid, const emulator::CpuState& start, Window* out,
                          bool other_threads) {
  out->start = start;
  const uint64_t t0 = MonotonicNs();
  if (pages_.Refresh(t0, kMapsMaxAgeNs)) {
    emulator_.Reset();
    ++resets_;
  }
  ThreadGuest guest(tid, pages_);
  pages_.BeginWindow(start.gpr[emulator::kRsp]);
  out->emulated = emulator_.Run(out->start, guest, other_threads);
  pages_.EndWindow();
  out->emulate_ns = MonotonicNs() - t0;
}

SteppedWindow AsSteppedWindow(const emulator::EmulatedWindow& w) {
  SteppedWindow s;
  s.events = w.events;
  s.taken = w.taken;
  s.instructions = w.instructions;
  s.end = w.end == emulator::EmulationEnd::kComplete  ? WindowEnd::kComplete
          : w.end == emulator::EmulationEnd::kSyscall ? WindowEnd::kSyscall
                                                      : WindowEnd::kEmulationEnded;
  return s;
}

EmulationCheck CheckEmulatedWindow(pid_t tid, const EmulatedWindows::Window& window,
                                   InstructionReader& reader, uint64_t max_instructions) {
  EmulationCheck check;
  const emulator::EmulatedWindow& e = window.emulated;
  if (e.instructions == 0 || e.instructions > max_instructions) {
    check.detail = "window of " + std::to_string(e.instructions) + " instructions not checked";
    check.stepped.thread_stopped = true;
    return check;
  }
  WindowStepOptions o;
  o.mode = StepMode::kSingleStep;
  o.window_taken = ~0u;
  o.max_instructions = e.instructions;
  o.max_stops = max_instructions * 4 + 1000;  // REP iterations each take a step
  StepContext ctx;
  ctx.reader = &reader;
  check.stepped = StepThreadWindow(tid, window.start.rip, ctx, o);
  const SteppedWindow& s = check.stepped;
  // A window the emulator ended before a system call or an instruction it does not model is
  // stepped to the same point; the stepper itself stops before a system call.
  const bool stepped_all = s.instructions == e.instructions &&
                           (s.end == WindowEnd::kComplete || s.end == WindowEnd::kSyscall);
  const size_t n = std::min(s.events.size(), e.events.size());
  for (size_t i = 0; i < n; ++i) {
    if (s.events[i] == e.events[i]) continue;
    check.verdict = EmulationCheck::Verdict::kDiverged;
    check.detail = "event " + std::to_string(i) + ": stepped " + Describe(s.events[i]) +
                   ", emulated " + Describe(e.events[i]);
    return check;
  }
  if (!stepped_all) {
    if (s.end == WindowEnd::kComplete || s.end == WindowEnd::kSyscall) {
      // The real thread stopped short or ran on with every event so far equal.
      check.verdict = EmulationCheck::Verdict::kDiverged;
      check.detail = "stepped " + std::to_string(s.instructions) + " instructions, emulated " +
                     std::to_string(e.instructions);
      return check;
    }
    check.detail = "stepping ended early: " + std::string(WindowEndName(s.end));
    return check;
  }
  if (s.events.size() != e.events.size()) {
    check.verdict = EmulationCheck::Verdict::kDiverged;
    check.detail = "stepped " + std::to_string(s.events.size()) + " events, emulated " +
                   std::to_string(e.events.size());
    return check;
  }
  check.verdict = EmulationCheck::Verdict::kIdentical;
  if (s.thread_stopped) {
    check.detail = StateDifference(tid, e.state);
    check.state_differs = !check.detail.empty();
  }
  return check;
}

}  // namespace pathprof::stepping
