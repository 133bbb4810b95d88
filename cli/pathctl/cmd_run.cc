// pathctl run: profiles a command (or a running process, --pid) with the embedded pipeline, no
// daemon needed, and prints its hot paths, hot subpaths, hot call pairs, hot methods and the top
// of its calling context tree when it exits or --duration ends.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/held_command.h"
#include "pathctl/interrupts.h"
#include "pathctl/run_report.h"
#include "pathctl/session_flags.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/clock.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathctl {
namespace {

namespace pl = pathprof::pipeline;

// Waits up to `ms` for the child to exit, then kills it; its exit status (128 + signal).
int ReapWithin(pid_t child, int ms) {
  int status = 0;
  for (int waited = 0; waited < ms; waited += 10) {
    if (waitpid(child, &status, WNOHANG) == child)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    usleep(10000);
  }
  kill(child, SIGKILL);
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What run's flags ask for.
struct RunFlags {
  pl::SessionConfig config;
  double duration_s = 0;  // 0: until the target exits
  uint32_t top = 10;
  pid_t pid = 0;  // --pid; 0: run the command after --
  bool json = false;
  std::string output;  // -o: the report's file; empty: standard output
};

// Fills `flags` from `args`; the usage problems, in the order found (empty: all well).
std::vector<std::string> ParseRunFlags(Args& args, RunFlags* flags) {
  std::vector<std::string> problems;
  flags->json = args.Has("json");
  flags->output = args.Get("output");
  // The session flags start shares, with the defaults of pipeline::kSessionDefaults.
  ReadSessionConfig(args, &flags->config, &problems);
  // Timed here rather than by the session (whole seconds) so that 500ms means 500 ms; the
  // session ends the same way (Stop(): state stopped) either way.
  flags->duration_s = args.Seconds("duration");
  flags->top = static_cast<uint32_t>(args.Int("top"));
  flags->pid = static_cast<pid_t>(args.Int("pid"));
  for (auto& p : args.Problems()) problems.push_back(p);
  if (flags->pid == 0 && args.rest().empty()) problems.push_back("give -- CMD [ARGS] or --pid P");
  if (flags->pid != 0 && !args.rest().empty()) problems.push_back("give either --pid or a command");
  return problems;
}

// The process to profile into `config->pids`: --pid as it is, or the command forked and held
// before its exec in `held`. kExitOk, or the exit code after saying why not.
int OpenTarget(const RunFlags& flags, const std::vector<std::string>& command,
               pl::SessionConfig* config, std::optional<HeldCommand>* held) {
  if (flags.pid != 0) {
    // Same exit code as the daemon commands give for a process that is not there.
    if (kill(flags.pid, 0) != 0 && errno == ESRCH) {
      std::fprintf(stderr, "pathctl run: no process %d (pathctl ps lists them)\n", flags.pid);
      return kExitNotFound;
    }
    config->pids = {static_cast<uint32_t>(flags.pid)};
    return kExitOk;
  }
  // The JSON report owns standard output: the command's goes to standard error, so that
  // `pathctl run --json -- CMD | jq` reads one JSON object whatever CMD prints. With -o the
  // report has a file of its own and the command keeps standard output.
  auto forked = HeldCommand::Fork(command, /*stdout_to_stderr=*/flags.json && flags.output.empty());
  if (!forked.ok()) return FailLocal("run", forked.status());
  held->emplace(std::move(*forked));
  config->pids = {static_cast<uint32_t>((*held)->pid())};
  return kExitOk;
}

// Blocks until the session ends (every target exited), or stops it when `duration_s` passes or
// a signal asks pathctl to end (interrupts.h): then the report covers what was collected.
void WaitForEnd(pl::Session& session, double duration_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(static_cast<long long>(duration_s * 1e6));
  while (!session.WaitEnded(20)) {
    if (InterruptSignal() != 0 ||
        (duration_s > 0 && std::chrono::steady_clock::now() >= deadline)) {
      session.Stop();
      return;
    }
  }
}

int RunRun(Args& args) {
  RunFlags flags;
  if (auto problems = ParseRunFlags(args, &flags); !problems.empty())
    return UsageError("run", problems);
  // The report's file is opened (as the user running pathctl) before anything starts: a path
  // that cannot be written fails now, not after the whole run.
  pathprof::decoders::UniqueFd report_file;
  if (!flags.output.empty()) {
    report_file = pathprof::decoders::UniqueFd(
        open(flags.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (report_file.get() < 0)
      return FailLocal("run", pathprof::Status(pathprof::ErrorCode::kInvalidArgument,
                                               "cannot write the report to " + flags.output + ": " +
                                                   std::strerror(errno)));
  }
  std::optional<HeldCommand> held;
  if (int rc = OpenTarget(flags, args.rest(), &flags.config, &held); rc != kExitOk) return rc;
  const uint32_t pid = flags.config.pids[0];
  // Session::Start checks the settings and chooses the branch source (a source the host cannot
  // give fails with the probe's reason); a held command that cannot be profiled is killed unrun
  // when `held` goes.
  auto symbols = std::make_shared<pl::SymbolService>();
  auto session = pl::Session::Start("run", flags.config,
                                    pathprof::collectors::ProbeHostCapabilities(), symbols);
  // A held command never ran: its pid would only point the user at a process that is gone, and
  // the reason (a source this host cannot give, most often) is the host's, not the command's.
  if (!session.ok())
    return FailLocal("run", held
                                ? session.status()
                                : pathprof::WithContext(session.status(), "cannot profile pid " +
                                                                              std::to_string(pid)));
  if (held) {
    // Until its exec the child runs pathctl's code (and its libc), not the command's: as perf
    // record's enable_on_exec, the profile starts at the exec.
    (*session)->HoldUntilExec(pid);
    if (pathprof::Status ran = held->Release(); !ran.ok()) {
      (*session)->Stop();
      std::fprintf(stderr, "pathctl run: %s\n", ran.message().c_str());
      return kExitError;
    }
    // Release returns once the exec happened: the images are the command's from now, and what
    // is stamped before now was the launcher's.
    (*session)->NoteExec(pid, pathprof::MonotonicNs());
  }
  // On stderr with --json too: the report is stdout's, and scripts that attach to a --pid wait
  // for this line before they let the target go.
  const pl::SessionInfo info = (*session)->Info();
  std::fprintf(stderr, "pathctl run: profiling pid %u (source %s: %s; %s)\n", pid,
               std::string(pathprof::collectors::BranchSourceName(info.source)).c_str(),
               info.source_reason.c_str(), info.stacks_reason.c_str());
  CatchInterrupts();
  WaitForEnd(**session, flags.duration_s);
  int exit_status = -1;
  if (held) {
    // The duration ended (or a signal came to pathctl alone) with the command still running:
    // it is not ours to keep alive. One that ignores SIGTERM gets SIGKILL half a second later:
    // run returns within D + 2 s. Ctrl-C in a terminal has already signalled it too.
    if ((*session)->Info().state != pl::SessionState::kTargetExited) kill(held->pid(), SIGTERM);
    exit_status = ReapWithin(held->pid(), 500);
  }
  // The text report names hot methods and the tree's nodes by function alone: their source
  // lines (the images' DWARF, decompressed) are read for the JSON report only.
  const pathprof::v1::RunReport report =
      MakeRunReport(**session, *symbols, flags.top, exit_status, /*function_lines=*/flags.json);
  if (report_file.get() >= 0) {
    std::fflush(stdout);
    dup2(report_file.get(), STDOUT_FILENO);
  }
  flags.json ? PrintJson(report) : PrintRunText(report);
  std::fflush(stdout);
  ExitAsInterrupted();  // with the report printed, end as the signal would have, as perf does
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "run", "profile a command (or --pid) with the embedded pipeline and print its hot paths",
    "usage: pathctl run [options] -- CMD [ARGS]\n"
    "       pathctl run [options] -p PID\n\n"
    "Runs CMD (or attaches to process P), profiles it with eBPF stack samples and the best\n"
    "branch source (PT > LBR > ptrace bursts unless --source says otherwise), and prints its hot\n"
    "paths with their blocks' functions and lines, hot subpaths, hot call pairs, hot methods and\n"
    "the top of its calling context tree when it exits or --duration passes (then CMD is\n"
    "sent SIGTERM, and SIGKILL half a second later; a --pid target is left running).\n"
    "SIGINT (Ctrl-C), SIGTERM or SIGHUP end the collection the same way: the report is printed,\n"
    "then pathctl ends by that signal, as perf record does (exit status 128 + the signal).\n"
    "--step-mode says how ptrace bursts step a window: auto (what `pathctl caps` found works\n"
    "best here), emulate (one stop per window, the branches run in an emulator), breakpoints\n"
    "(debug registers), int3 (int3 bytes in the text, for hosts whose debug registers never\n"
    "fire) or step (one stop per instruction).\n"
    "--call-graph: dwarf (default) copies the top 12-16 KiB of the user stack with each sample\n"
    "and unwinds it with the binaries' DWARF CFI, which programs built without frame pointers\n"
    "need (as perf record --call-graph dwarf); fp trusts the frame-pointer chain alone.\n"
    "The processes CMD (or P) forks from then on are profiled too, as perf record follows\n"
    "them, each with its own counts in the report (stacks; branch sources stay on CMD or P\n"
    "itself), at most --max-descendants of them; --no-inherit profiles CMD or P alone. A\n"
    "report whose target did no work itself while its children did says so. The session\n"
    "flags and their defaults are pathctl start's, but for this one: start follows children\n"
    "only with --inherit.",
    Concat({IntFlag("pid", "PID", "", 1, kMaxPid,
                    "attach to a running process instead of "
                    "starting CMD")
                .Short("-p"),
            IntFlag("top", "K", "10", 1, 1000, "entries per table"),
            BoolFlag("json",
                     "the whole report as one JSON object on stdout (CMD's own standard output "
                     "then goes to standard error, unless -o)"),
            StringFlag("output", "FILE", "",
                       "write the report (text, or JSON with --json) to FILE, not stdout")
                .Short("-o")},
           SessionFlags(kRunFollowsChildren)),
    RunRun});

}  // namespace
}  // namespace pathctl
