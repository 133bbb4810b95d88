// pathctl run: profiles a command (or a running process, --pid) with the embedded pipeline, no
// daemon needed, and prints its hot paths, hot subpaths, hot call pairs, hot methods and the top
// of its calling context tree when it exits or --duration ends.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/held_command.h"
#include "pathprof/api/convert.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/pipeline/session.h"

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

std::string Outcomes(uint64_t bits, uint32_t len) {
  std::string s;
  for (uint32_t i = 0; i < len; ++i) s += (bits >> i & 1) ? '1' : '0';
  return s;
}

struct Report {
  pl::SessionInfo info;
  pl::HotPathsResult paths;
  pl::HotSubpathsResult subpaths;
  pl::HotCallPairsResult pairs;
  pl::HotMethodsResult methods;
  pl::CallingContextTree cct;
  std::vector<pl::TargetStats> stats;
  int exit_status = -1;
};

// The report as protobuf's JSON mapping of v1::RunReport: the same messages the daemon serves.
// The session is pathctl's own, not a daemon resource, so neither it nor its answers are named.
void PrintJson(const Report& r) {
  pathprof::v1::RunReport out;
  pathprof::api::ToProto(r.info, out.mutable_session());
  out.mutable_session()->clear_name();
  out.set_exit_status(r.exit_status);
  pathprof::api::ToProto(r.paths, "", out.mutable_hot_paths());
  pathprof::api::ToProto(r.subpaths, "", r.subpaths.subpaths.size(), out.mutable_hot_subpaths());
  pathprof::api::ToProto(r.pairs, "", out.mutable_hot_call_pairs());
  pathprof::api::ToProto(r.methods, "", out.mutable_hot_methods());
  pathprof::api::ToProto(r.cct, "", out.mutable_cct());
  for (const pl::TargetStats& t : r.stats) pathprof::api::ToProto(t, "", out.add_stats());
  pathctl::PrintJson(out);
}

void PrintText(const Report& r) {
  std::printf("pathctl run: session %s, pid", r.info.id.c_str());
  for (uint32_t p : r.info.pids) std::printf(" %u", p);
  std::printf(", %s", std::string(pl::SessionStateName(r.info.state)).c_str());
  if (r.exit_status >= 0) std::printf(" (exit status %d)", r.exit_status);
  std::printf("\n  branches: %s\n  stacks:   %s\n", r.info.source_reason.c_str(),
              r.info.stacks_reason.c_str());

  std::printf("\nhot paths (%s, %llu distinct):\n",
              std::string(pl::PathEstimatorName(r.paths.estimator)).c_str(),
              static_cast<unsigned long long>(r.paths.paths_distinct));
  int rank = 0;
  for (const pl::HotPath& p : r.paths.paths) {
    std::printf("  #%-2d %5.1f%%", ++rank, 100 * p.estimate.share);
    if (p.estimate.error_bound > 0)
      std::printf(" ±%.1f%%", r.paths.total > 0 ? 100 * p.estimate.error_bound / r.paths.total : 0);
    std::printf("  %u branches [%s]  %s\n", p.length, Outcomes(p.outcomes, p.length).c_str(),
                p.start.ToString().c_str());
    for (size_t i = 1; i < p.blocks.size(); ++i)
      std::printf("        -> %s\n", p.blocks[i].ToString().c_str());
  }
  if (r.paths.paths.empty()) std::printf("  (none: no branch windows were collected)\n");

  std::printf("\nhot subpaths (OSP, f=%.3g):\n", r.subpaths.sampling_frequency);
  for (const pl::Subpath& s : r.subpaths.subpaths) {
    std::printf("  %5.1f%%  %u blocks:", 100 * s.estimate.share, s.length);
    for (size_t i = 0; i < s.blocks.size() && i < 4; ++i)
      std::printf(" %s%s", i ? "-> " : "", s.blocks[i].ToString().c_str());
    std::printf("%s\n", s.blocks.size() > 4 ? " ..." : "");
  }
  std::printf("\nhot call pairs:\n");
  for (const pl::CallPair& c : r.pairs.pairs)
    std::printf("  %5.1f%%  %s -> %s\n", 100 * c.estimate.share, c.call_site.ToString().c_str(),
                c.target.ToString().c_str());
  std::printf("\nhot methods (self from stacks, entries from branch windows):\n");
  for (const pl::HotMethod& m : r.methods.methods)
    std::printf("  %5.1f%% self  %5.1f%% entries  %s\n", 100 * m.self.share, 100 * m.entries.share,
                m.function.ToString().c_str());

  std::printf("\ncalling context tree (%llu samples; total share, self share):\n",
              static_cast<unsigned long long>(r.cct.samples));
  std::vector<int> depth_of(r.cct.nodes.size() + 1, 0);
  std::vector<uint64_t> ids;
  for (const pl::CctNode& n : r.cct.nodes) {
    int depth = 0;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == n.parent_id) depth = depth_of[i] + 1;
    ids.push_back(n.id);
    depth_of[ids.size() - 1] = depth;
  }
  // Depth-first for printing (the result is breadth-first).
  std::vector<size_t> order;
  std::vector<std::pair<uint64_t, size_t>> todo;
  for (size_t i = r.cct.nodes.size(); i-- > 0;)
    if (r.cct.nodes[i].parent_id == 0) todo.push_back({r.cct.nodes[i].id, i});
  while (!todo.empty()) {
    auto [id, i] = todo.back();
    todo.pop_back();
    order.push_back(i);
    for (size_t j = r.cct.nodes.size(); j-- > 0;)
      if (r.cct.nodes[j].parent_id == id) todo.push_back({r.cct.nodes[j].id, j});
  }
  const double total = r.cct.total_weight > 0 ? r.cct.total_weight : 1;
  for (size_t i : order) {
    const pl::CctNode& n = r.cct.nodes[i];
    std::printf("  %5.1f%% %5.1f%% %*s%s\n", 100 * n.total_weight / total,
                100 * n.self_weight / total, 2 * depth_of[i], "", n.function.ToString().c_str());
  }
  std::printf("\naccounting:\n");
  for (const pl::TargetStats& t : r.stats) {
    std::printf(
        "  pid %u: %llu stack samples, %llu windows, %llu branches, pipeline CPU %.3f s, "
        "~%llu KiB\n",
        t.pid, static_cast<unsigned long long>(t.stack_samples),
        static_cast<unsigned long long>(t.windows), static_cast<unsigned long long>(t.branches),
        t.pipeline_cpu_seconds, static_cast<unsigned long long>(t.memory_bytes / 1024));
    if (t.namespace_pid != 0)
      std::printf("    pid %u in its own pid namespace (a container)\n", t.namespace_pid);
    if (!t.window_weighting.empty())
      std::printf("    windows weighted by %s\n", t.window_weighting.c_str());
    for (const auto& [k, v] : t.drops)
      std::printf("    dropped %-28s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    for (const auto& [k, v] : t.decode_errors)
      std::printf("    decode error %-23s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  }
}

int RunRun(Args& args) {
  const bool json = args.Has("json");
  pl::SessionConfig config;
  if (!pl::ParseSourceChoice(args.Get("source", "auto"), &config.source))
    return UsageError("run", {"--source must be auto, pt, lbr, ptrace or none"});
  if (!pl::ParseStepChoice(args.Get("step-mode", "auto"), &config.sampling.step_mode))
    return UsageError("run", {"--step-mode must be auto, breakpoints, int3 or step"});
  if (!pl::ParseCallGraph(args.Get("call-graph", "dwarf"), &config.sampling.call_graph))
    return UsageError("run", {"--call-graph must be dwarf or fp"});
  // As perf record does: children forked from now on are profiled too, unless --no-inherit.
  config.follow_children = !args.Has("no-inherit");
  // -F and the older --stack-hz are --freq's other spellings (Args).
  config.sampling.stack_hz = static_cast<uint32_t>(args.GetInt("freq", 99, 0, 10000));
  config.sampling.bursts_per_second = args.GetDouble("burst-rate", 20, 0, 10000);
  config.sampling.window_branches = static_cast<uint32_t>(args.GetInt("window", 32, 1, 4096));
  // Timed here rather than by the session (whole seconds) so that 500ms means 500 ms; the
  // session ends the same way (Stop(): state stopped) either way.
  const double duration = args.GetDuration("duration", 0, 1, 0, kMaxU32);
  const long long top = args.GetInt("top", 10, 1, 1000);
  const long long pid_arg = args.GetInt("pid", 0, 1, kMaxPid);
  std::vector<std::string> problems = args.Problems();
  if (pid_arg == 0 && args.rest().empty()) problems.push_back("give -- CMD [ARGS] or --pid P");
  if (pid_arg != 0 && !args.rest().empty()) problems.push_back("give either --pid or a command");
  if (!problems.empty()) return UsageError("run", problems);

  // A branch source the host cannot give fails here, with the probe's reason, before any
  // command is started for nothing.
  const pathprof::collectors::HostCapabilities caps = pathprof::collectors::ProbeHostCapabilities();
  {
    std::string reason;
    auto source = pl::ChooseBranchSource(config.source, caps, &reason);
    if (!source.ok()) {
      std::fprintf(stderr, "pathctl run: %s\n", source.status().ToString().c_str());
      return kExitError;
    }
  }

  pid_t child = -1;
  std::optional<HeldCommand> held;
  if (pid_arg != 0) {
    // Same exit code as the daemon commands give for a process that is not there.
    if (kill(static_cast<pid_t>(pid_arg), 0) != 0 && errno == ESRCH) {
      std::fprintf(stderr, "pathctl run: no process %lld (pathctl ps lists them)\n", pid_arg);
      return kExitNotFound;
    }
    config.pids = {static_cast<uint32_t>(pid_arg)};
  } else {
    auto forked = HeldCommand::Fork(args.rest());
    if (!forked.ok()) return FailLocal("run", forked.status());
    held.emplace(std::move(*forked));
    child = held->pid();
    config.pids = {static_cast<uint32_t>(child)};
  }

  // A held command that cannot be profiled is killed unrun when `held` goes.
  auto session = pl::Session::Start("run", config, caps, nullptr);
  if (!session.ok())
    return FailLocal("run",
                     pathprof::WithContext(session.status(),
                                           "cannot profile pid " + std::to_string(config.pids[0])));
  if (held) {
    if (pathprof::Status ran = held->Release(); !ran.ok()) {
      (*session)->Stop();
      std::fprintf(stderr, "pathctl run: %s\n", ran.message().c_str());
      return kExitError;
    }
    // The profile attached to our copy of the process: its images are the command's from now.
    (*session)->NoteExec(static_cast<uint32_t>(child));
  }
  // On stderr with --json too: the report is stdout's, and scripts that attach to a --pid wait
  // for this line before they let the target go.
  std::fprintf(stderr, "pathctl run: profiling pid %u (%s; %s)\n", config.pids[0],
               (*session)->Info().source_reason.c_str(), (*session)->Info().stacks_reason.c_str());
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(static_cast<long long>(duration * 1e6));
  while (!(*session)->WaitEnded(duration > 0 ? 20 : 200)) {
    if (duration > 0 && std::chrono::steady_clock::now() >= deadline) {
      (*session)->Stop();
      break;
    }
  }
  Report r;
  if (child > 0) {
    // The duration ended with the command still running: it is not ours to keep alive. One
    // that ignores SIGTERM gets SIGKILL half a second later: run returns within D + 2 s.
    if ((*session)->Info().state != pl::SessionState::kTargetExited) kill(child, SIGTERM);
    r.exit_status = ReapWithin(child, 500);
  }
  const uint32_t k = static_cast<uint32_t>(top);
  r.info = (*session)->Info();
  pl::HotPathsQuery hq;
  hq.top_k = k;
  r.paths = (*session)->HotPaths(hq);
  pl::HotSubpathsQuery sq;
  sq.top_k = k;
  r.subpaths = (*session)->HotSubpaths(sq);
  r.pairs = (*session)->HotCallPairs(k);
  r.methods = (*session)->HotMethods(k);
  pl::CctQuery cq;
  cq.max_depth = 24;
  cq.min_weight = 0.02;
  cq.max_nodes = 200;
  r.cct = (*session)->Cct(cq);
  r.stats = (*session)->Stats();
  if (json)
    PrintJson(r);
  else
    PrintText(r);
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "run",
    "profile a command (or --pid) with the embedded pipeline and print its hot paths",
    "usage: pathctl run [--source auto|pt|lbr|ptrace|none] [--step-mode "
    "auto|breakpoints|int3|step]\n"
    "                   [-F HZ] [--duration DUR] [--top K] [--burst-rate R] [--window W]\n"
    "                   [--call-graph dwarf|fp] [--no-inherit] [--json] -- CMD [ARGS]\n"
    "       pathctl run [options] -p PID\n\n"
    "  -p, --pid PID     attach to a running process instead of starting CMD\n"
    "  -F, --freq HZ     eBPF stack samples per second (default 99; 0: off; formerly --stack-hz)\n"
    "  --duration DUR    stop after DUR: 500ms, 5s, 2m (a bare number is seconds; default: when\n"
    "                    CMD exits)\n"
    "  --top K           entries per table (default 10, at most 1000)\n"
    "  --burst-rate R    ptrace bursts per second (default 20)\n"
    "  --window W        taken branches per window (default 32)\n"
    "  --json            the whole report as one JSON object on stdout\n\n"
    "Runs CMD (or attaches to process P), profiles it with eBPF stack samples and the best\n"
    "branch source (PT > LBR > ptrace bursts unless --source says otherwise), and prints its hot\n"
    "paths with their blocks' functions and lines, hot subpaths, hot call pairs, hot methods and\n"
    "the top of its calling context tree when it exits or --duration passes (then CMD is\n"
    "sent SIGTERM, and SIGKILL half a second later; a --pid target is left running).\n"
    "--step-mode says how ptrace bursts step a window: auto (what `pathctl caps` found works\n"
    "best here), breakpoints (debug registers), int3 (int3 bytes in the text, for hosts whose\n"
    "debug registers never fire) or step (one stop per instruction).\n"
    "--call-graph: dwarf (default) copies the top 12-16 KiB of the user stack with each sample\n"
    "and unwinds it with the binaries' DWARF CFI, which programs built without frame pointers\n"
    "need (as perf record --call-graph dwarf); fp trusts the frame-pointer chain alone.\n"
    "The processes CMD (or P) has forked, and forks from then on, are profiled too, each with\n"
    "its own counts in the report;\n"
    "--no-inherit profiles the one process only. Branch sources stay on CMD (or P) itself.",
    {"json", "no-inherit"},
    RunRun});

}  // namespace
}  // namespace pathctl
