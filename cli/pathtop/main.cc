// pathtop: a top-like live view of one process's hot paths, served by pathprofd.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "pathprof/api/daemon_socket.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/core/procfs.h"
#include "pathtop/fetcher.h"
#include "pathtop/model.h"
#include "pathtop/terminal.h"

namespace {

constexpr const char* kUsage =
    "usage: pathtop [--pid PID | --comm NAME | --session ID] [--socket PATH | --address "
    "HOST:PORT]\n"
    "               [--interval SECONDS] [--top N] [--keep]\n"
    "               [--source auto|none|ptrace|lbr|pt] [--step-mode "
    "auto|emulate|breakpoints|int3|step]\n"
    "       pathtop --version\n"
    "\n"
    "A live view of a process's hot paths, hot subpaths, calling-context tree, hot call pairs\n"
    "and hot methods from pathprofd. Starts a session for the process or joins a running one;\n"
    "without --pid/--comm it lists the processes to choose from.\n"
    "\n"
    "  --pid PID           profile this process\n"
    "  --comm NAME         profile every process with this executable name\n"
    "  --session ID        show a session that exists (pathctl sessions), e.g. a continuous\n"
    "                      window's archive imported with pathctl import WINDOW.pbs; never\n"
    "                      started, stopped or deleted by pathtop\n"
    "  --socket PATH       pathprofd's Unix socket (default $PATHPROF_SOCKET, else\n"
    "                      /run/pathprof/pathprofd.sock)\n"
    "  --address HOST:PORT pathprofd over TCP instead\n"
    "  --interval SECONDS  refresh period (default 2)\n"
    "  --top N             rows asked per view (default 50)\n"
    "  --keep              leave the sessions pathtop started running when it exits\n"
    "                      (otherwise they are stopped and deleted)\n"
    "  --source S          branch source of a session pathtop starts (default auto)\n"
    "  --step-mode M       how its ptrace bursts step (default: the daemon's; auto: what\n"
    "                      `pathctl caps` found works best here)\n"
    "\n"
    "Keys: 1-6 views (6: flame graph), < > or F6 sort, r reverse, / or F4 filter, F3 search,\n"
    "F5 tree, Enter on a tree node its hot paths, i the header in full, p or space pause,\n"
    "? or F1 help, q or F10 quit.\n";

// Ctrl-C, kill and a closed terminal end pathtop the way `q` does, so the sessions it started
// are deleted rather than left running in the daemon. Set here, read by the UI loop.
volatile sig_atomic_t g_quit_signal = 0;

void OnQuitSignal(int sig) {
  g_quit_signal = sig;
}

// Before initscr: ncurses installs its own SIGINT/SIGTERM handlers only where none is set.
void CatchQuitSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnQuitSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int Usage(const char* problem) {
  std::fprintf(stderr, "pathtop: %s\n\n%s", problem, kUsage);
  return 2;
}

// A finite number in [lo, hi]; NaN and infinities fail (the negated comparison catches NaN).
bool ParseNumber(const char* s, double* out, double lo, double hi) {
  char* end = nullptr;
  *out = std::strtod(s, &end);
  return end != s && *end == '\0' && std::isfinite(*out) && *out >= lo && *out <= hi;
}

std::string CommOf(uint32_t pid) {
  auto comm = pathprof::procfs::Procfs::Host().Comm(static_cast<pid_t>(pid));
  return comm.ok() ? *comm : "";
}

std::string LabelFor(const pathtop::TargetSpec& t) {
  if (t.pid != 0) {
    std::string comm = CommOf(t.pid);
    return "pid " + std::to_string(t.pid) + (comm.empty() ? "" : " (" + comm + ")");
  }
  if (!t.comm.empty()) return "comm " + t.comm;
  if (!t.session.empty()) return t.session;
  return "choose a process (Enter)";
}

// The newest answers into the model; true when something changed.
bool Absorb(pathtop::Inbox in, pathtop::Model* model, pathtop::StatsTracker* stats) {
  if (in.empty()) return false;
  if (in.connection) model->SetConnection(*in.connection);
  if (in.session) model->SetSession(*in.session);
  if (in.stats) model->SetStats(stats->Update(*in.stats, in.stats_time_s));
  if (in.hot_paths) model->SetHotPaths(*in.hot_paths);
  if (in.subpaths) model->SetSubpaths(*in.subpaths);
  if (in.cct) model->SetCct(*in.cct);
  if (in.call_pairs) model->SetCallPairs(*in.call_pairs);
  if (in.methods) model->SetMethods(*in.methods);
  if (in.context_paths) model->SetContextPaths(*in.context_paths);
  if (in.targets) model->SetTargets(*in.targets);
  for (const auto& [view, message] : in.view_errors) model->SetViewError(view, message);
  return true;
}

// Draws, reads keys and hands them to the model until `q`, F10 or a quit signal.
void RunUi(pathtop::Model* model, pathtop::Fetcher* fetcher) {
  using namespace pathtop;
  StatsTracker stats;
  Terminal term;
  bool dirty = true;
  while (g_quit_signal == 0) {
    dirty = Absorb(fetcher->Take(), model, &stats) || dirty;
    if (dirty) term.Draw(model->Layout(term.width(), term.height()));
    dirty = false;

    int k = term.ReadKey(100);
    if (k < 0) continue;
    Action action = model->HandleKey(k);
    dirty = action != Action::kNone;
    if (action == Action::kQuit) return;
    if (action == Action::kViewChanged) fetcher->SetView(model->view(), model->context());
    if (action == Action::kPickTarget) {
      TargetSpec picked;
      picked.pid = model->picked_pid();
      model->SetTargetLabel(LabelFor(picked));
      model->ResetData();
      stats = StatsTracker();
      model->SetView(View::kHotPaths);
      fetcher->SetTarget(picked);
      fetcher->SetView(View::kHotPaths);
    }
  }
}

struct Args {
  pathtop::TargetSpec target;
  pathtop::FetcherOptions options;
  std::string address;  // empty: the Unix socket of pathprof::api::DaemonSocketPath
};

// The words of pathctl start's --source and --step-mode (api/v1_enums.h): "auto" is
// STEP_MODE_AUTO; without --step-mode the request leaves it unset, the daemon's default.
bool ParseSource(const std::string& s, pathprof::v1::SourceChoice* out) {
  return pathprof::api::ParseSourceChoiceWord(s, out);
}

bool ParseStepMode(const std::string& s, pathprof::v1::StepMode* out) {
  return pathprof::api::ParseStepModeWord(s, out);
}

// One option with its value; an exit code when it is wrong.
std::optional<int> ParseOption(const std::string& a, const char* v, Args* args) {
  double number = 0;
  if (a == "--pid") {
    if (!ParseNumber(v, &number, 1, 2147483647) || number != std::floor(number)) {
      return Usage("--pid needs a process id, an integer in [1, 2147483647]");
    }
    args->target.pid = static_cast<uint32_t>(number);
  } else if (a == "--source") {
    if (!ParseSource(v, &args->options.source)) {
      return Usage("--source is auto, none, ptrace, lbr, pt, snapshot or hybrid");
    }
  } else if (a == "--step-mode") {
    if (!ParseStepMode(v, &args->options.step_mode)) {
      return Usage("--step-mode is auto, emulate, breakpoints, int3 or step");
    }
  } else if (a == "--comm") {
    args->target.comm = v;
  } else if (a == "--session") {
    const std::string id = v;
    if (id.empty() || id == "sessions/") return Usage("--session needs a session id");
    args->target.session = id.rfind("sessions/", 0) == 0 ? id : "sessions/" + id;
  } else if (a == "--socket") {
    args->address = std::string("unix:") + v;
  } else if (a == "--address") {
    args->address = v;
  } else if (a == "--interval") {
    if (!ParseNumber(v, &number, 0.1, 3600)) {
      return Usage("--interval needs seconds between 0.1 and 3600");
    }
    args->options.interval_s = number;
  } else if (a == "--top") {
    if (!ParseNumber(v, &number, 1, 100000) || number != std::floor(number)) {
      return Usage("--top needs a row count, an integer in [1, 100000]");
    }
    args->options.top_k = static_cast<uint32_t>(number);
  } else {
    return Usage(("unknown option " + a).c_str());
  }
  return std::nullopt;
}

// The command line into `args`; an exit code when pathtop should exit now (help, version, a
// usage error).
std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("pathtop %s\n", PATHPROF_VERSION_STRING);
      return 0;
    }
    if (a == "--keep") {
      args->options.stop_owned_session = false;
      continue;
    }
    if (i + 1 >= argc) return Usage((a + " needs a value").c_str());
    if (std::optional<int> bad = ParseOption(a, argv[++i], args)) return bad;
  }
  const pathtop::TargetSpec& t = args->target;
  if ((t.pid != 0) + !t.comm.empty() + !t.session.empty() > 1)
    return Usage("give one of --pid, --comm and --session");
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pathtop;
  Args args;
  if (std::optional<int> done = ParseArgs(argc, argv, &args)) return *done;
  if (args.address.empty()) args.address = "unix:" + pathprof::api::DaemonSocketPath("");
  const TargetSpec& target = args.target;
  const FetcherOptions& options = args.options;
  const std::string& address = args.address;
  if (!isatty(STDOUT_FILENO)) {
    std::fprintf(stderr, "pathtop: needs a terminal; for scripts use `pathctl paths --json`\n");
    return 1;
  }

  Model model;
  model.SetTargetLabel(LabelFor(target));
  model.SetIntervalSeconds(options.interval_s);
  ConnectionState connecting;
  connecting.target = address;
  connecting.message = "connecting";
  model.SetConnection(connecting);
  if (target.empty()) model.SetView(View::kTargets);

  CatchQuitSignals();
  Fetcher fetcher(MakeGrpcClient(address), address, target, options);
  fetcher.Start();
  RunUi(&model, &fetcher);
  fetcher.Stop();
  return 0;
}
