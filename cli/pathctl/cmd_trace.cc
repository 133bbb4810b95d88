#include <cstdio>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathprof/stepping/exact_tracer.h"
#include "pathprof/v1/tools.pb.h"

namespace pathctl {
namespace {

constexpr const char* kUsage =
    "usage: pathctl trace --exact -o OUT.pbs [--batch-events N] [--max-steps N] [--json]\n"
    "                     -- CMD [ARGS]\n"
    "\n"
    "Runs CMD under ptrace single-step and writes every branch it retires (all threads, taken\n"
    "and not taken) and the images it maps to OUT.pbs. Exact but slow: expect tens of thousands\n"
    "of instructions per second, so trace small programs (see examples/).\n"
    "  --exact           the ptrace single-step tracer (the only mode so far)\n"
    "  -o, --output      the .pbs file to write\n"
    "  --batch-events N  events per batch (default 4096)\n"
    "  --max-steps N     kill CMD after N instructions (default: no limit)\n"
    "  --json            the tracer's counts as one JSON object on stdout (else a line on stderr)";

int RunTrace(Args& args) {
  bool exact = args.Has("exact");
  const bool json = args.Has("json");
  const std::string out = args.Get("output");  // -o is its short spelling (Args)
  const std::vector<std::string>& extra = args.positional();
  long long batch = args.GetInt("batch-events", 4096, 1, 1 << 20);
  long long max_steps = args.GetInt("max-steps", 0, 0, kMaxI64);
  auto problems = args.Problems();
  if (!exact) problems.push_back("only --exact tracing is implemented; pass --exact");
  if (out.empty()) problems.push_back("-o OUT.pbs is required");
  if (args.rest().empty()) problems.push_back("give the command to trace after --");
  if (batch <= 0) problems.push_back("--batch-events must be positive");
  if (max_steps < 0) problems.push_back("--max-steps must not be negative");
  if (!extra.empty()) problems.push_back("unexpected argument '" + extra[0] + "'");
  if (!problems.empty()) return UsageError("trace", problems);

  pathprof::stepping::ExactTraceOptions options;
  options.argv = args.rest();
  options.batch_events = static_cast<size_t>(batch);
  options.max_steps = static_cast<uint64_t>(max_steps);
  auto stats = pathprof::stepping::TraceExactToFile(options, out);
  if (!stats.ok()) {
    std::fprintf(stderr, "pathctl trace: %s\n", stats.status().ToString().c_str());
    return kExitError;
  }
  const auto& s = *stats;
  if (json) {
    pathprof::v1::TraceReport report;
    report.set_output(out);
    report.set_instructions(static_cast<int64_t>(s.steps));
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
    return s.branches == 0 ? kExitNoData : kExitOk;
  }
  std::fprintf(
      stderr,
      "pathctl trace: %llu instructions stepped, %llu branches (%llu taken), %llu threads, "
      "%llu images, %llu signals forwarded, %llu decode failures, %llu unexplained transfers, "
      "%llu lost traps decoded across, %llu steps that never trapped%s; program exit status "
      "%d; wrote %s\n",
      (unsigned long long)s.steps, (unsigned long long)s.branches, (unsigned long long)s.taken,
      (unsigned long long)s.threads, (unsigned long long)s.images,
      (unsigned long long)s.signals_forwarded, (unsigned long long)s.decode_failures,
      (unsigned long long)s.unexpected_transfers, (unsigned long long)s.lost_step_traps,
      (unsigned long long)s.step_timeouts, s.step_limit_hit ? ", stopped at --max-steps" : "",
      s.exit_code, out.c_str());
  return s.branches == 0 ? kExitNoData : kExitOk;
}

PATHCTL_COMMAND(Command{"trace",
                        "record a program's exact branch stream (ptrace single-step)",
                        kUsage,
                        {"exact", "json"},
                        RunTrace});

}  // namespace
}  // namespace pathctl
