// pathprof-tracer: the helper process ptrace sessions run in (tracer_helper.h).
//   pathprof-tracer bursts --parent PID --pid PID [--window W] [--rate R] [--cap F]
//                          [--max-steps N] [--step-mode auto|step|breakpoints|int3|emulate]
//                          [--seed S] [--verify-emulation 0|1] [--uid U --gid G]
//                          [--probe TEXT]
//     runs the burst tracer on its fds 3 (control, from the collector) and 4 (data, to it),
//     as uid U and gid G (no supplementary groups, no capabilities) when given; with the step
//     probe result TEXT (as `probe` prints it) instead of its own;
//   pathprof-tracer probe [--fresh]
//     prints the step-mechanism probe (step_probe.h), cached or --fresh.
// Not meant to be run by hand; `pathctl caps` shows the probe.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "../src/burst_tracer.h"
#include "../src/burst_wire.h"
#include "pathprof/core/procfs.h"
#include "pathprof/stepping/helper_sandbox.h"
#include "pathprof/stepping/step_probe.h"

namespace {

namespace pc = pathprof::stepping;

constexpr int kControlFd = 3;
constexpr int kDataFd = 4;
constexpr int kExitUsage = 2;
constexpr int kExitOrphan = 3;

int Usage(const char* why) {
  std::fprintf(stderr,
               "pathprof-tracer: %s\nusage: pathprof-tracer bursts --parent PID --pid PID "
               "[options]\n       pathprof-tracer probe [--fresh]\n",
               why);
  return kExitUsage;
}

bool ParseNumber(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == 0;
}

int RunBursts(int argc, char** argv) {
  pc::PtraceBurstOptions o;
  std::optional<pc::StepProbeResult> probe;  // --probe: the collector's, instead of our own
  double parent = 0, uid = -1, gid = -1;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return Usage("every option takes a value");
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    double v = 0;
    if (key == "--step-mode") {
      if (!pc::ParseStepRequest(value, &o.step_mode))
        return Usage("--step-mode: auto|step|breakpoints|int3|emulate");
      continue;
    }
    if (key == "--probe") {
      pc::StepProbeResult given;
      if (!pc::StepProbeResult::Parse(value, &given))
        return Usage("--probe: a step probe result as `pathprof-tracer probe` prints it");
      probe = given;
      continue;
    }
    if (!ParseNumber(value, &v)) return Usage("option values are numbers");
    if (key == "--parent")
      parent = v;
    else if (key == "--pid")
      o.pid = static_cast<pid_t>(v);
    else if (key == "--window")
      o.window_taken = static_cast<uint32_t>(v);
    else if (key == "--rate")
      o.bursts_per_second = v;
    else if (key == "--cap")
      o.max_stopped_fraction = v;
    else if (key == "--max-steps")
      o.max_steps_per_burst = static_cast<uint64_t>(v);
    else if (key == "--seed")
      o.seed = static_cast<uint64_t>(v);
    else if (key == "--verify-emulation")
      o.verify_emulation = v != 0;
    else if (key == "--uid")
      uid = v;
    else if (key == "--gid")
      gid = v;
    else
      return Usage(("unknown option " + key).c_str());
  }
  if (parent <= 0 || o.pid <= 0) return Usage("--parent and --pid are required");
  if ((uid < 0) != (gid < 0)) return Usage("--uid and --gid go together");
  // Credentials first: changing them clears the parent-death signal set below.
  std::string drop_error;
  if (uid >= 0) drop_error = pc::DropIdentity(static_cast<uid_t>(uid), static_cast<gid_t>(gid));
  // Die with the collector; and if it is already gone, never start tracing at all.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != static_cast<pid_t>(parent)) return kExitOrphan;
  if (fcntl(kControlFd, F_GETFD) < 0 || fcntl(kDataFd, F_GETFD) < 0)
    return Usage("fds 3 and 4 must be the collector's pipes");
  fcntl(kDataFd, F_SETFL, O_NONBLOCK);
  fcntl(kDataFd, F_SETPIPE_SZ, 1 << 20);
  const pc::wire::Hello hello = pc::wire::OurHello();
  if (pc::wire::Send(kDataFd, pc::wire::Type::kHello, &hello, sizeof hello) !=
      pc::wire::SendResult::kSent)
    return 1;
  if (!drop_error.empty()) {
    pc::wire::SendError(kDataFd, pathprof::ErrorCode::kPermission, 0,
                        "the tracer could not become uid " +
                            std::to_string(static_cast<uid_t>(uid)) + ": " + drop_error);
    return 1;
  }
  if (const pathprof::Status st = o.Validate(); !st.ok()) {
    pc::wire::SendError(kDataFd, st.code(), 0, st.message());
    return 1;
  }
  // The sandbox comes after the attach (seizing is what needs the rights) and before the first
  // window (the first code interpreted).
  const pc::AfterAttach sandbox = [](pc::StepMode mode) -> std::string {
    pc::SandboxPolicy s;
    s.role = pc::SandboxRole::kTracer;
    s.allow_text_writes = mode == pc::StepMode::kInt3 || mode == pc::StepMode::kBreakpoints;
    const std::string error = pc::EnterHelperSandbox(s);
    if (!error.empty()) return "ptrace bursts: the tracer runs without its sandbox: " + error;
#ifndef NDEBUG
    // Tests only (builds with assertions): what an exploit of the emulator would do next.
    if (const char* fault = std::getenv("PATHPROF_TRACER_FAULT");
        fault != nullptr && std::strcmp(fault, "exec") == 0) {
      char* const argv[] = {const_cast<char*>("/bin/sh"), nullptr};
      execve(argv[0], argv, environ);
    }
#endif
    return "";
  };
  return pc::RunBurstTracer(o, kControlFd, kDataFd, static_cast<pid_t>(parent),
                            probe ? &*probe : nullptr, sandbox);
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a collector gone away is seen as EPIPE, not death
  if (argc < 2) return Usage("say what to run");
  const std::string what = argv[1];
  if (what == "bursts") return RunBursts(argc, argv);
  if (what == "probe") {
    const bool fresh = argc > 2 && std::strcmp(argv[2], "--fresh") == 0;
    const pc::StepProbeResult r = fresh ? pc::RunStepProbe() : pc::CachedStepProbe();
    std::fputs(r.Serialize().c_str(), stdout);
    return r.ran ? 0 : 1;
  }
  return Usage(("unknown command " + what).c_str());
}
