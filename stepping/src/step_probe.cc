#include "pathprof/stepping/step_probe.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "emulated_windows.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/host_quirks.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/x86_branch.h"
#include "ptrace_primitives.h"
#include "software_breakpoints.h"

// The code the probe child runs. Hidden labels, so every binary has its own copy.
//  - pathprof_probe_loop: a four-instruction loop (breakpoints, costs);
//  - pathprof_probe_steps: the instructions hypervisors emulate, each followed by a NOP, one
//    line per entry of kStepSequence below;
//  - pathprof_probe_emulate: a loop with stores, loads, a call and SSE compares, whose
//    emulated windows are checked against single steps;
//  - pathprof_probe_block: straight-line code and a jump, for BTF block stepping.
__asm__(R"(
  .text
  .p2align 4
  .globl pathprof_probe_loop
  .hidden pathprof_probe_loop
pathprof_probe_loop:
  nop
  nop
  inc %rax
  jmp pathprof_probe_loop
  .globl pathprof_probe_steps
  .hidden pathprof_probe_steps
pathprof_probe_steps:
  xor %eax, %eax
  cpuid
  nop
  rdtsc
  nop
  rdtscp
  nop
  rdrand %rax
  nop
  rdseed %rax
  nop
  rdpid %rax
  nop
  xor %ecx, %ecx
  xgetbv
  nop
  pause
  nop
  sub $16, %rsp
  sgdt (%rsp)
  nop
  sidt (%rsp)
  nop
  smsw %eax
  nop
  sldt %ax
  nop
  str %ax
  nop
  add $16, %rsp
  xor %ecx, %ecx
  rdpmc
  nop
  jmp pathprof_probe_loop
  .globl pathprof_probe_emulate
  .hidden pathprof_probe_emulate
pathprof_probe_emulate:
  sub $64, %rsp
  xor %ecx, %ecx
  pxor %xmm0, %xmm0
2:
  mov %rcx, (%rsp)
  add $1, %rcx
  mov (%rsp), %rdx
  test $3, %dl
  jnz 3f
  call pathprof_probe_leaf
3:
  movdqu (%rsp), %xmm1
  pcmpeqb %xmm0, %xmm1
  pmovmskb %xmm1, %eax
  cmp $0xffff, %eax
  jne 2b
  jmp 2b
pathprof_probe_leaf:
  lea 1(%rdx), %rax
  ret
  .globl pathprof_probe_block
  .hidden pathprof_probe_block
pathprof_probe_block:
  nop
  nop
  jmp 1f
  nop
1:
  nop
  jmp pathprof_probe_loop
)");

extern "C" {
extern const char pathprof_probe_loop[];
extern const char pathprof_probe_steps[];
extern const char pathprof_probe_block[];
extern const char pathprof_probe_emulate[];
}

namespace pathprof::stepping {
namespace {

// One entry per instruction of pathprof_probe_steps; "" marks set-up code, not probed.
constexpr const char* kStepSequence[] = {
    "",      "cpuid", "nop", "rdtsc",  "nop", "rdtscp", "nop", "rdrand", "nop",  "rdseed", "nop",
    "rdpid", "nop",   "",    "xgetbv", "nop", "pause",  "nop", "",       "sgdt", "nop",    "sidt",
    "nop",   "smsw",  "nop", "sldt",   "nop", "str",    "nop", "",       "",     "rdpmc",  "nop",
};
constexpr size_t kStepCount = sizeof kStepSequence / sizeof kStepSequence[0];

constexpr uint64_t kWait = 200'000'000;  // one stop; a working mechanism takes microseconds
constexpr int kCostSamples = 64;
constexpr int kProbeVersion = 2;

uint64_t Addr(const char* p) {
  return reinterpret_cast<uint64_t>(p);
}

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string Us(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1000.0);
  return buf;
}

class ProbeChild {
 public:
  ~ProbeChild() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int st;
    while (WaitStop(pid_, &st, kWait) == StopWait::kStopped) {
    }
  }

  // Forks the child, stopped and traced by this thread. Pins both to this CPU so that the costs
  // measured are those of a tracer beside its tracee (as the burst tracer runs).
  bool Start(std::string* error) {
    pid_ = fork();
    if (pid_ < 0) {
      *error = std::string("fork failed: ") + std::strerror(errno);
      return false;
    }
    if (pid_ == 0) {
      // Only async-signal-safe calls: the caller may be multithreaded.
      if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(126);
      raise(SIGSTOP);
      for (;;) pause();
    }
    int st = 0;
    if (WaitStop(pid_, &st, 2 * kWait) != StopWait::kStopped) {
      *error = WIFEXITED(st) && WEXITSTATUS(st) == 126
                   ? "PTRACE_TRACEME refused (seccomp, Yama ptrace_scope=3 or an LSM)"
                   : "the probe child did not stop";
      return false;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpu = sched_getcpu();
    if (cpu >= 0 && sched_getaffinity(0, sizeof saved_, &saved_) == 0) {
      CPU_SET(cpu, &set);
      pinned_ = sched_setaffinity(0, sizeof set, &set) == 0;
      sched_setaffinity(pid_, sizeof set, &set);
    }
    return true;
  }

  void Unpin() {
    if (pinned_) sched_setaffinity(0, sizeof saved_, &saved_);
    pinned_ = false;
  }

  pid_t pid() const { return pid_; }

  // Resumes the child at `rip` with `request` (PTRACE_CONT, PTRACE_SINGLESTEP, ...) and waits.
  StopWait Go(long request, uint64_t rip, int* st) {
    if (!WriteRip(pid_, rip)) return StopWait::kGone;
    return Go(request, st);
  }
  StopWait Go(long request, int* st) {
    const bool ok = request == PTRACE_SINGLESTEP ? SingleStepThread(pid_)
                                                 : ptrace(static_cast<__ptrace_request>(request),
                                                          pid_, nullptr, nullptr) == 0;
    if (!ok) return StopWait::kGone;
    return WaitStop(pid_, st, kWait);
  }

  // After a timeout: stop the child again (bounded), so that the next probe can steer it. The
  // child was traced with PTRACE_TRACEME, which PTRACE_INTERRUPT does not serve; a SIGSTOP
  // brings it to a signal-delivery stop, and the next resume suppresses the signal.
  bool Recover() {
    if (kill(pid_, SIGSTOP) != 0) return false;
    int st;
    return WaitStop(pid_, &st, kWait) == StopWait::kStopped;
  }

 private:
  pid_t pid_ = -1;
  bool pinned_ = false;
  cpu_set_t saved_{};
};

bool IsTrap(int st) {
  return WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP;
}

void ProbeSingleStep(ProbeChild& child, StepProbeResult* r) {
  // Cost: a hundred steps round the loop, in batches.
  std::vector<uint64_t> per_step;
  int st = 0;
  if (!WriteRip(child.pid(), Addr(pathprof_probe_loop))) {
    r->single_step.detail = "could not set the probe child's registers";
    return;
  }
  for (int batch = 0; batch < 8; ++batch) {
    const uint64_t t0 = MonotonicNs();
    for (int i = 0; i < 16; ++i) {
      if (child.Go(PTRACE_SINGLESTEP, &st) != StopWait::kStopped || !IsTrap(st)) {
        r->single_step.detail = "PTRACE_SINGLESTEP did not stop the probe child within 200 ms";
        child.Recover();
        return;
      }
    }
    per_step.push_back((MonotonicNs() - t0) / 16);
  }
  r->single_step_ns = Median(per_step);

  // Traps after each emulated instruction.
  std::vector<uint64_t> at(kStepCount + 1);
  at[0] = Addr(pathprof_probe_steps);
  for (size_t i = 0; i < kStepCount; ++i) {
    decoders::X86Instruction insn;
    if (!decoders::DecodeX86Fast(reinterpret_cast<const uint8_t*>(at[i]), 15, at[i], &insn)) {
      r->single_step.detail = "cannot decode the probe's own code";
      return;
    }
    at[i + 1] = insn.next();
  }
  uint64_t rip = at[0];
  if (!WriteRip(child.pid(), rip)) return;
  for (size_t i = 0; i < kStepCount;) {
    const StopWait w = child.Go(PTRACE_SINGLESTEP, &st);
    if (w != StopWait::kStopped) {
      r->single_step.detail = std::string("no trap within 200 ms after stepping ") +
                              (kStepSequence[i][0] ? kStepSequence[i] : "set-up code");
      child.Recover();
      return;
    }
    if (!IsTrap(st)) {
      // The CPU refused it (#UD: not supported; #GP: not allowed from user mode): skip it.
      if (kStepSequence[i][0]) r->not_probed.push_back(kStepSequence[i]);
      ++i;
      if (!WriteRip(child.pid(), at[i])) return;
      continue;
    }
    if (!ReadRip(child.pid(), &rip)) return;
    size_t landed = i + 1;
    while (landed <= kStepCount && at[landed] != rip) ++landed;
    if (landed > kStepCount) {
      r->single_step.detail = "a step landed outside the probe sequence";
      return;
    }
    if (landed > i + 1 && kStepSequence[i][0]) r->lost_trap_after.push_back(kStepSequence[i]);
    i = landed;
  }
  r->single_step.works = true;
  r->single_step.detail = "traps after every instruction";
  if (!r->lost_trap_after.empty()) {
    std::string names;
    for (const std::string& n : r->lost_trap_after) names += (names.empty() ? "" : ", ") + n;
    r->single_step.detail = "trap lost after " + names +
                            " (the step stops one instruction late; the tracers decode across)";
  }
  r->single_step.detail += "; " + Us(r->single_step_ns) + " per step";
}

void ProbeDebugRegisters(ProbeChild& child, StepProbeResult* r) {
  const pid_t pid = child.pid();
  const uint64_t target = Addr(pathprof_probe_loop) + 1;  // the second nop
  uint64_t back = 0;
  if (!PokeDebugRegister(pid, 0, target) || !PokeDebugRegister(pid, 7, 1)) {
    r->dr_breakpoints.detail =
        std::string("the kernel refused the debug registers (") + std::strerror(errno) + ")";
    return;
  }
  PeekDebugRegister(pid, 7, &back);
  int st = 0;
  const StopWait w = child.Go(PTRACE_CONT, Addr(pathprof_probe_loop), &st);
  siginfo_t si{};
  uint64_t rip = 0;
  if (w != StopWait::kStopped || !IsTrap(st) || !StopSigInfo(pid, &si) ||
      si.si_code != kTrapHwBkpt || !ReadRip(pid, &rip) || rip != target) {
    if (w == StopWait::kTimedOut) child.Recover();
    PokeDebugRegister(pid, 7, 0);
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "armed (DR7 reads back 0x%llx) but never fired within 200 ms: this "
                  "hypervisor does not deliver debug-register breakpoints",
                  static_cast<unsigned long long>(back));
    r->dr_breakpoints.detail = buf;
    return;
  }
  std::vector<uint64_t> legs;
  for (int i = 0; i < kCostSamples; ++i) {
    const uint64_t t0 = MonotonicNs();
    if (!SetResumeFlag(pid) || child.Go(PTRACE_CONT, &st) != StopWait::kStopped) break;
    legs.push_back(MonotonicNs() - t0);
  }
  PokeDebugRegister(pid, 7, 0);
  r->dr_leg_ns = Median(legs);
  r->dr_breakpoints.works = true;
  r->dr_breakpoints.detail = "fire; " + Us(r->dr_leg_ns) + " per stop";
}

void ProbeInt3(ProbeChild& child, StepProbeResult* r) {
  const pid_t pid = child.pid();
  const uint64_t loop = Addr(pathprof_probe_loop);
  SoftwareBreakpoints bps(pid);
  const uint64_t target = loop + 1;
  if (!bps.Update(std::span<const uint64_t>(&target, 1), {})) {
    r->int3_breakpoints.detail =
        std::string("could not write an int3 into the child's text through /proc/PID/mem (") +
        std::strerror(errno) + ")";
    return;
  }
  int st = 0;
  std::vector<uint64_t> legs;
  for (int i = 0; i <= kCostSamples; ++i) {
    const uint64_t t0 = MonotonicNs();
    const StopWait w = child.Go(PTRACE_CONT, loop, &st);
    const uint64_t cost = MonotonicNs() - t0;
    siginfo_t si{};
    uint64_t rip = 0;
    if (w != StopWait::kStopped || !IsTrap(st) || !StopSigInfo(pid, &si) ||
        si.si_code != kTrapInt3 || !ReadRip(pid, &rip) || !bps.OwnsTrap(rip) || rip - 1 != target) {
      if (w == StopWait::kTimedOut) child.Recover();
      bps.RemoveAll();
      r->int3_breakpoints.detail = "an int3 written into the text did not stop the child";
      return;
    }
    if (i > 0) legs.push_back(cost);  // the first includes copying the page
  }
  bps.RemoveAll();
  r->int3_leg_ns = Median(legs);
  r->int3_breakpoints.works = true;
  r->int3_breakpoints.detail = "fire; " + Us(r->int3_leg_ns) + " per stop";
}

// Emulated windows of the probe loop, each checked against single steps of the child through
// the same instructions (emulated_windows.h); works when every one is identical and whole.
void ProbeEmulation(ProbeChild& child, StepProbeResult* r) {
  constexpr int kWindows = 8;
  // A window the tracer's clock cut (the probe lost its CPU to other work: a loaded host) says
  // nothing about the emulator: it is taken again, up to this many times in all, before the
  // probe gives up on emulation (the verdict is cached for the boot, see CachedStepProbe).
  constexpr int kTimeLimitRetries = 20;
  int retries = 0;
  const pid_t pid = child.pid();
  if (!r->single_step.works) {
    r->emulate.detail = "not tried: its windows are checked by single steps, which do not work";
    return;
  }
  if (!WriteRip(pid, Addr(pathprof_probe_emulate))) {
    r->emulate.detail = "could not set the probe child's registers";
    return;
  }
  EmulatedWindows windows(pid, 32);
  InstructionReader reader(pid);
  std::vector<uint64_t> costs;
  for (int i = 0; i < kWindows; ++i) {
    EmulatedWindows::Window w;
    emulator::CpuState start;
    if (!ReadCpuState(pid, &start)) {
      r->emulate.detail = "could not read the probe child's registers";
      return;
    }
    windows.Run(pid, start, &w);
    if (w.emulated.end == emulator::EmulationEnd::kTimeLimit && ++retries <= kTimeLimitRetries) {
      --i;
      continue;
    }
    if (w.emulated.end != emulator::EmulationEnd::kComplete) {
      r->emulate.detail = std::string("the probe loop's window ended early: ") +
                          std::string(emulator::EmulationEndName(w.emulated.end)) + " at " +
                          std::string(emulator::MnemonicName(w.emulated.mnemonic));
      return;
    }
    const EmulationCheck check = CheckEmulatedWindow(pid, w, reader);
    if (check.verdict != EmulationCheck::Verdict::kIdentical || check.state_differs) {
      r->emulate.detail =
          "an emulated window differed from single steps of the same code: " + check.detail;
      if (!check.stepped.thread_stopped) child.Recover();
      return;
    }
    if (i > 0) costs.push_back(w.emulate_ns);  // the first reads and decodes the code
  }
  r->emulate_window_ns = Median(costs);
  r->emulate.works = true;
  r->emulate.detail = "windows identical to single steps; " + Us(r->emulate_window_ns) +
                      " of emulation per window, one stop";
}

void ProbeBlockStep(ProbeChild& child, StepProbeResult* r) {
#if defined(__x86_64__)  // glibc declares PTRACE_SINGLEBLOCK as an enum, not a macro
  const uint64_t start = Addr(pathprof_probe_block);
  int st = 0;
  const StopWait w = child.Go(PTRACE_SINGLEBLOCK, start, &st);
  uint64_t rip = 0;
  if (w != StopWait::kStopped || !ReadRip(child.pid(), &rip)) {
    if (w == StopWait::kTimedOut) child.Recover();
    r->block_step.detail = "PTRACE_SINGLEBLOCK did not stop the child";
    return;
  }
  // nop(1) nop(1) jmp rel8(2) nop(1) | target: a block step stops at the target, 5 bytes in.
  if (rip == start + 5) {
    r->block_step.works = true;
    r->block_step.detail =
        "stops once per taken branch (not used: the stepper needs not-taken "
        "conditionals too)";
  } else {
    r->block_step.detail = rip == start + 1 ? "ignored: stops after every instruction, like a "
                                              "single step (typical of VMs)"
                                            : "stopped at an unexpected address";
  }
#else
  r->block_step.detail = "PTRACE_SINGLEBLOCK not defined on this architecture";
#endif
}

// Where the cache lives, or "" for none (see the header).
std::string CachePath() {
  if (const char* env = std::getenv("PATHPROF_STEP_PROBE_CACHE"))
    return std::string(env) == "off" ? "" : env;
  // The daemon's runtime directory when it is ours alone to write (root, or the pathprof
  // user the unit runs as); nobody else's file is ever trusted.
  if (geteuid() == 0) mkdir("/run/pathprof", 0755);
  struct stat run {};
  if (stat("/run/pathprof", &run) == 0 && run.st_uid == geteuid() && !(run.st_mode & 022))
    return "/run/pathprof/step-probe";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR")) {
    struct stat st {};
    if (stat(xdg, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077))
      return std::string(xdg) + "/pathprof-step-probe";
  }
  return "";
}

void Put(std::ostringstream& o, const char* key, const MechanismResult& m) {
  o << key << ".works=" << (m.works ? 1 : 0) << "\n" << key << ".detail=" << m.detail << "\n";
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string x;
  while (std::getline(in, x, ','))
    if (!x.empty()) out.push_back(x);
  return out;
}

}  // namespace

std::string StepProbeCacheKey(const HostQuirks& quirks) {
  utsname u{};
  uname(&u);
  auto boot_id = procfs::Procfs::Host().ReadGlobal("sys/kernel/random/boot_id");
  return "v" + std::to_string(kProbeVersion) + "/" + (boot_id.ok() ? *boot_id : "") + "/" +
         u.release + "/" + quirks.ToString();
}

bool StepProbeResult::Works(StepMode mode) const {
  return Of(mode).works;
}

const MechanismResult& StepProbeResult::Of(StepMode mode) const {
  switch (mode) {
    case StepMode::kBreakpoints:
      return dr_breakpoints;
    case StepMode::kInt3:
      return int3_breakpoints;
    case StepMode::kEmulate:
      return emulate;
    case StepMode::kSingleStep:
      break;
  }
  return single_step;
}

StepMode StepProbeResult::BestMode() const {
  return ChooseStepMode(std::nullopt, *this).mode;
}

StepModeChoice ChooseStepMode(std::optional<StepMode> requested, const StepProbeResult& probe) {
  StepModeChoice c;
  c.mode = requested.value_or(StepMode::kSingleStep);
  if (!probe.ran) {
    c.reason = "the step probe could not run: " + probe.error;
    return c;
  }
  if (requested) {
    c.ok = probe.Works(*requested);
    c.reason = c.ok ? "requested; the probe found it works here: " + probe.Of(*requested).detail
                    : "step mode " + std::string(StepModeName(*requested)) +
                          " does not work on this host: " + probe.Of(*requested).detail +
                          " (use --step-mode auto)";
    return c;
  }
  c.ok = true;
  // One stop per window, whatever the code: far cheaper than any stepping where it works.
  if (probe.emulate.works) {
    c.mode = StepMode::kEmulate;
    c.reason = "auto: emulated windows matched single steps in the probe; one stop and " +
               Us(probe.emulate_window_ns) + " of emulation per window";
    return c;
  }
  // Debug registers first: they leave the target's text alone. But where a hypervisor makes
  // their stops clearly dearer than an int3's (measured: 19.6 us against 9.2 us on an AMD EPYC
  // KVM guest, where int3 stepping cost the target half the CPU), the cheaper one wins. Not
  // planting int3 would not make a kill -9 of the tracer safer: the trap flag and the debug
  // registers outlive it too, and kill as many targets (docs/operations.md, "The tracer
  // process"), while the dearer stop gives fewer windows under the same cap.
  const bool int3_clearly_cheaper =
      probe.int3_leg_ns > 0 && probe.dr_leg_ns > 0 && probe.int3_leg_ns * 4 < probe.dr_leg_ns * 3;
  const std::string costs =
      Us(probe.int3_leg_ns) + " per int3 stop against " + Us(probe.dr_leg_ns) + " per DR stop";
  const std::string no_emulation = "; emulation does not work here: " + probe.emulate.detail;
  if (probe.dr_breakpoints.works && !(probe.int3_breakpoints.works && int3_clearly_cheaper)) {
    c.mode = StepMode::kBreakpoints;
    c.reason = "auto: debug-register breakpoints leave the text alone" +
               (probe.int3_breakpoints.works ? " and int3 is not clearly cheaper, " + costs
                                             : std::string()) +
               no_emulation;
  } else if (probe.int3_breakpoints.works) {
    c.mode = StepMode::kInt3;
    c.reason =
        probe.dr_breakpoints.works
            ? "auto: int3 stops are clearly cheaper here, " + costs + no_emulation
            : "auto: debug-register breakpoints do not work here: " + probe.dr_breakpoints.detail +
                  no_emulation;
  } else if (probe.single_step.works) {
    c.mode = StepMode::kSingleStep;
    c.reason = "auto: neither kind of breakpoint works here: " + probe.dr_breakpoints.detail +
               "; " + probe.int3_breakpoints.detail + no_emulation;
  } else {
    c.ok = false;
    c.reason =
        "no way to step a thread works on this host (single step: " + probe.single_step.detail +
        ")";
  }
  return c;
}

std::string StepProbeResult::Serialize() const {
  std::ostringstream o;
  o << "ran=" << (ran ? 1 : 0) << "\nerror=" << error << "\n";
  Put(o, "single_step", single_step);
  Put(o, "dr_breakpoints", dr_breakpoints);
  Put(o, "int3_breakpoints", int3_breakpoints);
  Put(o, "block_step", block_step);
  Put(o, "emulate", emulate);
  o << "lost_trap_after=" << Join(lost_trap_after) << "\nnot_probed=" << Join(not_probed)
    << "\nsingle_step_ns=" << single_step_ns << "\nint3_leg_ns=" << int3_leg_ns
    << "\ndr_leg_ns=" << dr_leg_ns << "\nemulate_window_ns=" << emulate_window_ns
    << "\nsimulated_quirks=" << simulated_quirks << "\n";
  return o.str();
}

bool StepProbeResult::Parse(const std::string& text, StepProbeResult* out) {
  StepProbeResult r;
  std::istringstream in(text);
  std::string line;
  int fields = 0;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    auto mech = [&](const char* name, MechanismResult* m) {
      if (key == std::string(name) + ".works") m->works = value == "1", ++fields;
      if (key == std::string(name) + ".detail") m->detail = value;
    };
    if (key == "ran") r.ran = value == "1", ++fields;
    if (key == "error") r.error = value;
    mech("single_step", &r.single_step);
    mech("dr_breakpoints", &r.dr_breakpoints);
    mech("int3_breakpoints", &r.int3_breakpoints);
    mech("block_step", &r.block_step);
    mech("emulate", &r.emulate);
    if (key == "lost_trap_after") r.lost_trap_after = Split(value);
    if (key == "not_probed") r.not_probed = Split(value);
    if (key == "single_step_ns") r.single_step_ns = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "int3_leg_ns") r.int3_leg_ns = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "dr_leg_ns") r.dr_leg_ns = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "emulate_window_ns") r.emulate_window_ns = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "simulated_quirks") r.simulated_quirks = value;
  }
  if (fields != 6) return false;
  *out = std::move(r);
  return true;
}

StepProbeResult RunStepProbe() {
  StepProbeResult r;
  r.simulated_quirks = SimulatedQuirks().ToString();
  WaitTicker ticker(2000);
  ProbeChild child;
  if (!child.Start(&r.error)) return r;
  r.ran = true;
  ProbeSingleStep(child, &r);
  ProbeDebugRegisters(child, &r);
  ProbeInt3(child, &r);
  ProbeBlockStep(child, &r);
  ProbeEmulation(child, &r);
  child.Unpin();
  return r;
}

StepProbeResult CachedStepProbe() {
  const HostQuirks quirks = SimulatedQuirks();
  std::string path = CachePath();
  // A file per quirk setting in the default places: with one file, runs with and without
  // simulated quirks (the test suite runs both side by side) each found the other's key and
  // probed again, 0.2-1.5 s per start. A path given in PATHPROF_STEP_PROBE_CACHE is used as is.
  if (!path.empty() && !std::getenv("PATHPROF_STEP_PROBE_CACHE") && !quirks.ToString().empty()) {
    std::string suffix = quirks.ToString().substr(0, 64);
    for (char& c : suffix)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    path += ".quirks-" + suffix;
  }
  const std::string key = StepProbeCacheKey(quirks);
  if (!path.empty()) {
    std::ifstream in(path);
    std::string first;
    if (std::getline(in, first) && first == "key=" + key) {
      std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      StepProbeResult cached;
      if (StepProbeResult::Parse(rest, &cached)) {
        cached.from_cache = true;
        return cached;
      }
    }
  }
  StepProbeResult r = RunStepProbe();
  // A probe whose emulated windows the clock kept cutting ran on a host too busy to judge:
  // cached, it would keep `auto` off emulation for the whole boot; the next start probes again.
  const bool cut_by_load =
      !r.emulate.works &&
      r.emulate.detail.find(emulator::EmulationEndName(emulator::EmulationEnd::kTimeLimit)) !=
          std::string::npos;
  if (!path.empty() && r.ran && !cut_by_load) {
    // Write then rename: a concurrent reader sees the old file or the new one, never half.
    const std::string tmp = path + "." + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << "key=" << key << "\n" << r.Serialize();
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
  }
  return r;
}

}  // namespace pathprof::stepping
