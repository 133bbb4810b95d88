#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

#include <google/protobuf/util/time_util.h>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/interrupts.h"
#include "pathprof/api/convert.h"
#include "pathprof/core/pbs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/hwmodel/window_estimator.h"
#include "pathprof/stepping/instruction_reader.h"
#include "pathprof/stepping/ptrace_bursts.h"
#include "pathprof/v1/tools.pb.h"

namespace pathctl {
namespace {

constexpr const char* kUsage =
    "usage: pathctl bursts -p PID [--duration DUR] [--burst-rate R] [--window W]\n"
    "                      [--max-stopped F] [--seed N] [--step-mode "
    "auto|emulate|breakpoints|int3|step]\n"
    "                      [--verify] [-o OUT.pbs] [--top K] [--json]\n"
    "\n"
    "Software LBR for hosts without a PMU: seizes every thread of PID with ptrace and, R times\n"
    "a second on average, steps one thread through W taken branches. Prints the hottest\n"
    "Ball-Larus paths (window-bias corrected estimates) and the session counters; detaches\n"
    "cleanly at the end, on Ctrl-C/SIGTERM, or when PID exits.\n"
    "--step-mode: auto (what `pathctl caps` says works best here), emulate (one stop per\n"
    "window, the branches run in an emulator), breakpoints (debug-register block stepping, ~8x\n"
    "fewer stops than step), int3 (block stepping with int3 bytes, where debug registers never\n"
    "fire) or step (PTRACE_SINGLESTEP every instruction).\n"
    "--verify single-steps the thread through every emulated window afterwards and compares,\n"
    "instruction by instruction (diagnosis: each window then costs hundreds of stops; the cap\n"
    "still holds, so far fewer windows).";

std::vector<Flag> BurstsFlags() {
  return {
      IntFlag("pid", "PID", "", 1, kMaxPid, "the process to watch (all its threads)").Short("-p"),
      DurationFlag("duration", "", 1, 0, 1e7,
                   "how long to run (default: until PID exits or Ctrl-C)"),
      DoubleFlag("burst-rate", "R", "", 0, 10000,
                 "mean bursts per second (default 1000 emulated, 20 stepped; each gap jittered "
                 "0.5x-1.5x; formerly --rate)"),
      IntFlag("window", "W", "32", 1, 4096, "taken branches per window, like LBR"),
      DoubleFlag("max-stopped", "F", "0.04", 0, 0.5,
                 "cap on the fraction of wall time threads spend stopped"),
      IntFlag("seed", "N", "", 0, kMaxI64, "seed of the jitter (default: from the clock)"),
      WordsFlag("step-mode", {"auto", "emulate", "breakpoints", "int3", "step"}, "auto",
                "how a window is stepped (see above)")
          .Accepts([](const std::string& s) {
            pathprof::stepping::StepMode m;
            return s == "auto" || pathprof::stepping::ParseStepMode(s, &m);
          }),
      BoolFlag("verify", "check every emulated window by single steps (see above)"),
      StringFlag("output", "OUT.pbs", "", "also write the windows to a .pbs file").Short("-o"),
      IntFlag("top", "K", "10", 0, 1000000, "hot paths to print (0: none)"),
      BoolFlag("json", "the hot paths and the session's counters as one JSON object on stdout"),
  };
}

namespace col = pathprof::stepping;

struct BurstsRequest {
  col::PtraceBurstOptions options;
  double duration_s = 0;  // 0: until the target exits or a signal
  bool json = false;
  long long top = 10;
  std::string output;  // a .pbs to write, or empty
};

// The flags into `req`; the usage error's exit code where they are wrong.
std::optional<int> ParseBursts(Args& args, BurstsRequest* req) {
  col::PtraceBurstOptions& o = req->options;
  o.pid = static_cast<pid_t>(args.Int("pid"));
  req->duration_s = args.Seconds("duration");
  if (args.Has("burst-rate")) o.bursts_per_second = args.Double("burst-rate");
  req->json = args.Has("json");
  o.verify_emulation = args.Has("verify");
  o.window_taken = static_cast<uint32_t>(args.Int("window"));
  o.max_stopped_fraction = args.Double("max-stopped");
  o.seed = static_cast<uint64_t>(args.Int("seed"));
  const std::string mode = args.Get("step-mode");
  req->top = args.Int("top");
  req->output = args.Get("output");  // -o is its short spelling (Args)
  const std::vector<std::string>& extra = args.positional();
  auto problems = args.Problems();
  if (o.pid <= 0) problems.push_back("--pid PID is required");
  if (!col::ParseStepRequest(mode, &o.step_mode))
    problems.push_back("--step-mode must be auto, emulate, breakpoints, int3 or step, not '" +
                       mode + "'");
  if (o.verify_emulation && o.step_mode && *o.step_mode != col::StepMode::kEmulate)
    problems.push_back("--verify checks emulated windows: use it with --step-mode emulate or auto");
  if (!extra.empty()) problems.push_back("unexpected argument '" + extra[0] + "'");
  if (auto st = o.Validate(); o.pid > 0 && !st.ok()) problems.push_back(st.ToString());
  if (!problems.empty()) return UsageError("bursts", problems);
  return std::nullopt;
}

// A .pbs for the windows, opened with the images they run in, so that a replay or
// `export --format perf-lbr` maps them.
pathprof::Result<pathprof::PbsWriter> OpenRecording(const std::string& path, pid_t pid) {
  PATHPROF_ASSIGN_OR_RETURN(pathprof::PbsWriter writer, pathprof::PbsWriter::Create(path));
  if (auto space = pathprof::decoders::ReadProcMaps(pid); space.ok()) {
    for (const pathprof::decoders::Mapping& m : space->mappings()) {
      if (!m.executable || m.IsSpecial()) continue;
      pathprof::ImageRecord r;
      r.pid = static_cast<uint32_t>(pid);
      r.start = m.start;
      r.end = m.end();
      r.file_offset = m.pgoff;
      r.path = m.path;
      (void)writer.Write(r);
    }
  }
  return writer;
}

double StoppedFraction(const col::PtraceBurstStats& s) {
  return s.elapsed_ns ? static_cast<double>(s.stopped_ns) / static_cast<double>(s.elapsed_ns) : 0;
}

std::string ModeName(const col::PtraceBurstStats& s) {
  return std::string(col::StepModeName(static_cast<col::StepMode>(s.step_mode)));
}

// The hottest paths (stdout): a table, or with the session's counters as one JSON object.
void PrintPaths(const BurstsRequest& req, const col::PtraceBurstStats& s,
                const std::vector<pathprof::hwmodel::PathEstimate>& estimates) {
  double total = 0;
  for (const auto& e : estimates) total += e.estimate;
  const long long shown = std::min<long long>(req.top, static_cast<long long>(estimates.size()));
  if (!req.json) {
    for (long long i = 0; i < shown; ++i)
      std::printf("%3lld %6.2f%%  %s\n", i + 1, 100 * estimates[i].estimate / total,
                  pathprof::hwmodel::FormatPathDescriptor(estimates[i].path).c_str());
    return;
  }
  pathprof::v1::BurstsReport report;
  report.set_pid(req.options.pid);
  *report.mutable_elapsed() =
      google::protobuf::util::TimeUtil::NanosecondsToDuration(static_cast<int64_t>(s.elapsed_ns));
  report.set_bursts(static_cast<int64_t>(s.bursts));
  report.set_windows(static_cast<int64_t>(s.windows));
  report.set_windows_short(static_cast<int64_t>(s.windows_short));
  report.set_branches(static_cast<int64_t>(s.events));
  report.set_taken(static_cast<int64_t>(s.taken));
  report.set_step_mode(pathprof::api::ToProto(static_cast<col::StepMode>(s.step_mode)));
  report.set_stopped_fraction(StoppedFraction(s));
  report.set_target_exited(s.target_exited);
  report.set_output(req.output);
  for (long long i = 0; i < shown; ++i) {
    pathprof::v1::BurstPath* p = report.add_paths();
    p->set_share(total > 0 ? estimates[i].estimate / total : 0);
    p->set_estimate(estimates[i].estimate);
    p->set_path(pathprof::hwmodel::FormatPathDescriptor(estimates[i].path));
  }
  PrintJson(report);
}

// Every counter of the session (stderr): what was collected, what was lost, and why.
void PrintCounters(const col::PtraceBurstStats& s) {
  std::fprintf(
      stderr,
      "pathctl bursts: %.1f s, %llu bursts, %llu windows (%llu short), %llu steps (%llu lost "
      "traps decoded across), %llu breakpoint legs (mode %s, %llu fallbacks), %llu branches "
      "(%llu taken); aborted: %llu syscall, %llu signal, %llu exit, %llu steps, %llu decode, "
      "%llu timed out, %llu over the cap; %llu deferred by the cap; %llu threads attached, "
      "%llu signals forwarded, %llu execs; threads stopped %.2f%% of wall time (%.2f%% in the "
      "worst second; the longest stop %.2f ms; %llu event stops)%s%s\n",
      static_cast<double>(s.elapsed_ns) / 1e9, (unsigned long long)s.bursts,
      (unsigned long long)s.windows, (unsigned long long)s.windows_short,
      (unsigned long long)s.steps, (unsigned long long)s.lost_step_traps,
      (unsigned long long)s.breakpoint_legs, ModeName(s).c_str(),
      (unsigned long long)s.step_mode_fallbacks, (unsigned long long)s.events,
      (unsigned long long)s.taken, (unsigned long long)s.aborted_syscall,
      (unsigned long long)s.aborted_signal, (unsigned long long)s.aborted_exit,
      (unsigned long long)s.aborted_steps, (unsigned long long)s.aborted_decode,
      (unsigned long long)s.aborted_timeout, (unsigned long long)s.aborted_budget,
      (unsigned long long)s.deferred_cap, (unsigned long long)s.threads_attached,
      (unsigned long long)s.signals_forwarded, (unsigned long long)s.execs,
      100.0 * StoppedFraction(s), static_cast<double>(s.max_stopped_ppm_1s) / 1e4,
      static_cast<double>(s.longest_stop_ns) / 1e6, (unsigned long long)s.event_stops,
      s.target_exited ? "; target exited" : "", s.detached ? "; detached" : "");
}

// Emulated windows: what they cost the tracer, and why the short ones ended.
void PrintEmulationCounters(const col::PtraceBurstStats& s) {
  if (s.emulated_windows == 0) return;
  const double n = static_cast<double>(s.emulated_windows);
  std::fprintf(
      stderr,
      "pathctl bursts: emulated %llu windows: %.1f instructions, %.1f us of emulation "
      "and %.2f pages read each; %llu cache resets; ended:",
      (unsigned long long)s.emulated_windows, static_cast<double>(s.emulated_instructions) / n,
      static_cast<double>(s.emulation_ns) / n / 1000.0,
      static_cast<double>(s.emulation_pages_read) / n, (unsigned long long)s.emulation_resets);
  for (size_t i = 0; i < s.emulation_ends.size(); ++i)
    if (s.emulation_ends[i] != 0)
      std::fprintf(stderr, " %s %llu", std::string(col::EmulationEndReason(i)).c_str(),
                   (unsigned long long)s.emulation_ends[i]);
  std::string by;
  for (const col::EndingInstruction& e : s.ending_instructions)
    if (e.windows != 0)
      by += " " + std::string(col::InstructionName(e.mnemonic)) + " " + std::to_string(e.windows);
  std::fprintf(stderr, "%s%s\n", by.empty() ? "" : "; by instruction:", by.c_str());
  if (s.verify_identical + s.verify_diverged + s.verify_state_differs + s.verify_unchecked == 0)
    return;
  std::fprintf(stderr,
               "pathctl bursts: verified by single steps: %llu identical, %llu diverged, %llu "
               "with other registers at the end, %llu unchecked (stepping ended early)\n",
               (unsigned long long)s.verify_identical, (unsigned long long)s.verify_diverged,
               (unsigned long long)s.verify_state_differs, (unsigned long long)s.verify_unchecked);
}

// Where the windows go: the path estimate and, with -o, the recording. The collector's reader
// thread feeds them while the main thread waits, hence the mutex.
struct WindowSinks {
  explicit WindowSinks(pid_t pid) : target_code(pid) {}
  void AddWindow(const pathprof::BranchBatch& b);

  std::unique_ptr<pathprof::decoders::CycleModel> cycle_model;  // null: weighted by instructions
  std::optional<pathprof::hwmodel::WindowEstimator> estimator;
  std::optional<pathprof::PbsWriter> writer;
  pathprof::Status write_status;
  col::InstructionReader target_code;  // the live target's code bytes
  std::mutex mu;
};

void WindowSinks::AddWindow(const pathprof::BranchBatch& b) {
  std::lock_guard<std::mutex> lock(mu);
  if (cycle_model) {
    const auto read_code = [&](uint64_t address) { return target_code.Bytes(address); };
    estimator->AddWindow(b.events, cycle_model->WindowDurations(b.events, read_code));
  } else {
    estimator->AddWindow(b);
  }
  if (writer && write_status.ok()) write_status = writer->Write(b);
}

// Bursts start where a timer interrupt lands: weight windows by their time, from the cycles
// of their blocks (decoders/cycle_model.h), or by their instructions where that is unavailable.
bool CreateEstimator(WindowSinks* sinks) {
  auto cycle_model = pathprof::decoders::CycleModel::Create();
  if (cycle_model.ok())
    sinks->cycle_model = std::move(*cycle_model);
  else
    std::fprintf(stderr, "pathctl bursts: windows weighted by instructions: %s\n",
                 cycle_model.status().message().c_str());
  pathprof::hwmodel::WindowEstimatorConfig ec;
  ec.starts = sinks->cycle_model ? pathprof::hwmodel::WindowStarts::kTime
                                 : pathprof::hwmodel::WindowStarts::kInstructions;
  auto estimator = pathprof::hwmodel::WindowEstimator::Create(ec);
  if (!estimator.ok()) return false;
  sinks->estimator.emplace(std::move(*estimator));
  return true;
}

// Runs until --duration passes, the target exits or a signal comes; the session's counters.
pathprof::Result<col::PtraceBurstStats> Collect(const BurstsRequest& req, WindowSinks* sinks) {
  col::PtraceBurstSink sink;
  sink.on_window = [sinks](const pathprof::BranchBatch& b) { sinks->AddWindow(b); };
  sink.on_note = [](const std::string& note) {
    std::fprintf(stderr, "pathctl bursts: %s\n", note.c_str());
  };
  CatchInterrupts();
  auto collector = col::PtraceBurstCollector::Start(req.options, sink);
  if (!collector.ok()) return collector.status();
  const long long total_ms = static_cast<long long>(req.duration_s * 1000);
  for (long long waited = 0; InterruptSignal() == 0 && !(*collector)->finished() &&
                             (req.duration_s == 0 || waited < total_ms);
       waited += 20)
    usleep(20000);
  return (*collector)->Stop();
}

// False (after saying why) where a window or the close could not be written.
bool CloseRecording(const BurstsRequest& req, WindowSinks* sinks) {
  if (!sinks->writer) return true;
  if (sinks->write_status.ok()) sinks->write_status = sinks->writer->Close();
  if (sinks->write_status.ok()) return true;
  std::fprintf(stderr, "pathctl bursts: writing %s: %s\n", req.output.c_str(),
               sinks->write_status.ToString().c_str());
  return false;
}

void PrintCycleModelStats(const pathprof::decoders::CycleModelStats& c) {
  std::fprintf(stderr,
               "pathctl bursts: windows weighted by time: %llu blocks timed by the cycle model, "
               "%llu unreadable, %llu without a fixed cost, %llu imputed at their window's "
               "cycles/instruction\n",
               (unsigned long long)c.blocks_estimated, (unsigned long long)c.unreadable_blocks,
               (unsigned long long)c.rejected_blocks, (unsigned long long)c.imputed_blocks);
}

int RunBursts(Args& args) {
  BurstsRequest req;
  if (std::optional<int> bad = ParseBursts(args, &req)) return *bad;
  WindowSinks sinks(req.options.pid);
  if (!req.output.empty()) {
    auto w = OpenRecording(req.output, req.options.pid);
    if (!w.ok()) {
      std::fprintf(stderr, "pathctl bursts: %s\n", w.status().ToString().c_str());
      return kExitError;
    }
    sinks.writer.emplace(std::move(*w));
  }
  if (!CreateEstimator(&sinks)) return kExitError;
  const auto s = Collect(req, &sinks);
  if (!s.ok()) {
    std::fprintf(stderr, "pathctl bursts: %s\n", s.status().ToString().c_str());
    return kExitError;
  }
  std::lock_guard<std::mutex> lock(sinks.mu);
  if (!CloseRecording(req, &sinks)) return kExitError;
  PrintPaths(req, *s, sinks.estimator->Estimates());
  PrintCounters(*s);
  PrintEmulationCounters(*s);
  if (sinks.cycle_model) PrintCycleModelStats(sinks.cycle_model->stats());
  return s->windows == 0 ? kExitNoData : kExitOk;
}

PATHCTL_COMMAND(Command{"bursts",
                        "sample a running process's branches with ptrace bursts (software LBR)",
                        kUsage, BurstsFlags(), RunBursts});

}  // namespace
}  // namespace pathctl
