#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/interrupts.h"
#include "pathprof/stepping/exact_tracer.h"
#include "pathprof/v1/tools.pb.h"

namespace pathctl {
namespace {

constexpr const char* kUsage =
    "usage: pathctl trace --exact -o OUT.pbs [--step-mode auto|breakpoints|int3|step]\n"
    "                     [--batch-events N] [--max-steps N] [--json] -- CMD [ARGS]\n"
    "\n"
    "Runs CMD under ptrace and writes every branch it retires (all threads, taken and not\n"
    "taken) and the images it maps to OUT.pbs. Exact but slow: CMD stops once per taken\n"
    "branch (block stepping) or once per instruction (single steps), so trace small programs\n"
    "(see examples/). On Ctrl-C or SIGTERM, CMD is killed and reaped, what was traced until\n"
    "then is written as a complete OUT.pbs, and pathctl exits 0 (3 if nothing was traced).\n"
    "--step-mode says how CMD is moved on between recorded stops, each giving the same events:\n"
    "auto (block stepping with what `pathctl caps` finds works, else single steps),\n"
    "breakpoints (debug registers), int3 (int3 bytes; one thread at a time) or step\n"
    "(PTRACE_SINGLESTEP).";

void PrintReportJson(const std::string& out, const pathprof::stepping::ExactTraceStats& s) {
  pathprof::v1::TraceReport report;
  report.set_output(out);
  report.set_instructions(static_cast<int64_t>(s.instructions));
  report.set_branches(static_cast<int64_t>(s.branches));
  report.set_taken(static_cast<int64_t>(s.taken));
  report.set_threads(static_cast<int64_t>(s.threads));
  report.set_images(static_cast<int64_t>(s.images));
  report.set_signals_forwarded(static_cast<int64_t>(s.signals_forwarded));
  report.set_decode_failures(static_cast<int64_t>(s.decode_failures));
  report.set_unexpected_transfers(static_cast<int64_t>(s.unexpected_transfers));
  report.set_lost_step_traps(static_cast<int64_t>(s.lost_step_traps));
  report.set_step_timeouts(static_cast<int64_t>(s.step_timeouts));
  report.set_step_limit_hit(s.step_limit_hit);
  report.set_exit_code(s.exit_code);
  PrintJson(report);
}

void PrintReportLine(const std::string& out, const pathprof::stepping::ExactTraceStats& s) {
  const std::string mode(pathprof::stepping::StepModeName(s.mode));
  std::string ended = s.step_limit_hit ? ", stopped at --max-steps" : "";
  if (s.interrupted) {
    const char* name = sigabbrev_np(InterruptSignal());
    ended = std::string(", interrupted by SIG") + (name ? name : "?") + " (the program killed)";
  }
  std::fprintf(
      stderr,
      "pathctl trace: %llu instructions (%s: %llu single steps, %llu breakpoint legs), %llu "
      "branches (%llu taken), %llu threads, %llu images, %llu signals forwarded, %llu decode "
      "failures, %llu unexplained transfers, %llu lost traps decoded across, %llu steps that "
      "never trapped, %llu paths a signal left unknown%s; program exit status %d; wrote %s\n",
      (unsigned long long)s.instructions, mode.c_str(), (unsigned long long)s.steps,
      (unsigned long long)s.breakpoint_legs, (unsigned long long)s.branches,
      (unsigned long long)s.taken, (unsigned long long)s.threads, (unsigned long long)s.images,
      (unsigned long long)s.signals_forwarded, (unsigned long long)s.decode_failures,
      (unsigned long long)s.unexpected_transfers, (unsigned long long)s.lost_step_traps,
      (unsigned long long)s.step_timeouts, (unsigned long long)s.unknown_paths, ended.c_str(),
      s.exit_code, out.c_str());
}

int RunTrace(Args& args) {
  bool exact = args.Has("exact");
  const bool json = args.Has("json");
  const std::string out = args.Get("output");  // -o is its short spelling (Args)
  const std::vector<std::string>& extra = args.positional();
  long long batch = args.Int("batch-events");
  long long max_steps = args.Int("max-steps");
  const std::string mode = args.Get("step-mode");
  pathprof::stepping::ExactTraceOptions options;
  auto problems = args.Problems();
  if (!exact) problems.push_back("only --exact tracing is implemented; pass --exact");
  if (out.empty()) problems.push_back("-o OUT.pbs is required");
  if (args.rest().empty()) problems.push_back("give the command to trace after --");
  if (batch <= 0) problems.push_back("--batch-events must be positive");
  if (max_steps < 0) problems.push_back("--max-steps must not be negative");
  if (!pathprof::stepping::ParseExactStepMode(mode, &options.step_mode))
    problems.push_back("--step-mode must be auto, breakpoints, int3 or step, not '" + mode + "'");
  if (!extra.empty()) problems.push_back("unexpected argument '" + extra[0] + "'");
  if (!problems.empty()) return UsageError("trace", problems);

  options.argv = args.rest();
  options.batch_events = static_cast<size_t>(batch);
  options.max_steps = static_cast<uint64_t>(max_steps);
  options.interrupt = InterruptFlag();
  CatchInterrupts();
  auto stats = pathprof::stepping::TraceExactToFile(options, out);
  if (!stats.ok()) {
    std::fprintf(stderr, "pathctl trace: %s\n", stats.status().ToString().c_str());
    return kExitError;
  }
  json ? PrintReportJson(out, *stats) : PrintReportLine(out, *stats);
  return stats->branches == 0 ? kExitNoData : kExitOk;
}

PATHCTL_COMMAND(Command{
    "trace",
    "record a program's exact branch stream (ptrace)",
    kUsage,
    {BoolFlag("exact", "the ptrace tracer (the only mode so far)"),
     StringFlag("output", "OUT.pbs", "", "the .pbs file to write").Short("-o"),
     WordsFlag("step-mode", {"auto", "breakpoints", "int3", "step"}, "auto",
               "how CMD is moved on between recorded stops (see above)")
         .Accepts([](const std::string& s) {
           pathprof::stepping::ExactStepMode m;
           return pathprof::stepping::ParseExactStepMode(s, &m);
         }),
     IntFlag("batch-events", "N", "4096", 1, 1 << 20, "events per batch"),
     IntFlag("max-steps", "N", "", 0, kMaxI64, "kill CMD after N instructions (default: no limit)"),
     BoolFlag("json",
              "the tracer's counts as one JSON object on stdout (else "
              "a line on stderr)")},
    RunTrace});

}  // namespace
}  // namespace pathctl
