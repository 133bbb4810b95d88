// pathctl start: begins a profiling session in the daemon and prints its id.
#include <cstdio>

#include "pathctl/client.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"

namespace pathctl {
namespace {
namespace v1 = pathprof::v1;

// The words of each setting, from the one table of each (api/v1_enums.h).
bool ParseSource(const std::string& s, v1::SourceChoice* out) {
  return pathprof::api::ParseSourceChoiceWord(s, out);
}

bool ParseKind(const std::string& s, v1::PathKind* out) {
  return pathprof::api::ParsePathKindWord(s, out);
}

// "auto" is STEP_MODE_AUTO: the step probe's choice, whatever the daemon's default.
bool ParseStepMode(const std::string& s, v1::StepMode* out) {
  return pathprof::api::ParseStepModeWord(s, out);
}

bool ParseCallGraph(const std::string& s, v1::CallGraph* out) {
  return pathprof::api::ParseCallGraphWord(s, out);
}

// Each Read* fills its part of the request and appends its usage problems; RunStart calls them
// in the order of the flags' problems in the usage error (and of Args' own range errors).

void ReadTarget(Args& args, v1::StartSessionRequest* req, std::vector<std::string>* problems) {
  int targets = 0;
  if (args.Has("pid")) {  // -p is its short spelling (Args)
    req->set_pid(static_cast<int32_t>(args.GetInt("pid", 0, 1, kMaxPid)));
    ++targets;
  }
  if (args.Has("name")) {
    req->set_executable_name(args.Get("name"));
    ++targets;
  }
  if (args.Has("cgroup")) {
    req->set_cgroup(args.Get("cgroup"));
    ++targets;
  }
  if (args.Has("unit")) {
    req->set_systemd_unit(args.Get("unit"));
    ++targets;
  }
  if (targets != 1) problems->push_back("give exactly one of --pid, --name, --cgroup, --unit");
}

void ReadSourceStepAndStacks(Args& args, v1::StartSessionRequest* req,
                             std::vector<std::string>* problems) {
  v1::SourceChoice src = v1::SOURCE_CHOICE_AUTO;
  if (!ParseSource(args.Get("source", "auto"), &src))
    problems->push_back("--source is auto, none, ptrace, lbr or pt");
  req->set_source(src);
  // Without --step-mode the request leaves it unset: the daemon's [ptrace] step_mode decides.
  v1::StepMode step = v1::STEP_MODE_UNSPECIFIED;
  if (args.Has("step-mode") && !ParseStepMode(args.Get("step-mode"), &step))
    problems->push_back("--step-mode is auto, emulate, breakpoints, int3 or step");
  req->mutable_sampling()->set_step_mode(step);
  v1::CallGraph call_graph = v1::CALL_GRAPH_DWARF;
  if (ParseCallGraph(args.Get("call-graph", "dwarf"), &call_graph))
    req->mutable_sampling()->set_call_graph(call_graph);
  else
    problems->push_back("--call-graph is dwarf or fp");
  req->set_follow_children(args.Has("inherit"));
  // Without --inherit no descendant is followed: --max-descendants is left unread (reported).
  if (req->follow_children())
    req->set_max_descendants(static_cast<int32_t>(args.GetInt("max-descendants", 0, 0, 1024)));
}

void ReadEngine(Args& args, v1::StartSessionRequest* req, std::vector<std::string>* problems) {
  v1::PathKind kind = v1::PATH_KIND_UNSPECIFIED;
  if (!ParseKind(args.Get("path-kind", "ball-larus"), &kind))
    problems->push_back("--path-kind is ball-larus, wpp, extended-loops or extended-calls");
  v1::EngineSettings& engine = *req->mutable_engine();
  engine.set_path_kind(kind);
  engine.set_extension(static_cast<int32_t>(args.GetInt("extension", 0, 0, 255)));
  engine.set_max_path_length(static_cast<int32_t>(args.GetInt("max-length", 0, 0, 64)));
  engine.set_hpt_entries(static_cast<int32_t>(args.GetInt("hpt-entries", 0, 0, 1 << 24)));
}

void ReadSampling(Args& args, v1::StartSessionRequest* req) {
  v1::SamplingSettings& sampling = *req->mutable_sampling();
  if (args.Has("freq"))  // -F and the older --stack-hz are its other spellings (Args)
    sampling.set_stack_hz(static_cast<int32_t>(args.GetInt("freq", 99, 0, 10000)));
  sampling.set_window_branches(static_cast<int32_t>(args.GetInt("window", 0, 0, 4096)));
  sampling.set_bursts_per_second(args.GetDouble("burst-rate", 0, 0, 10000));
  sampling.set_max_stopped_fraction(args.GetDouble("max-stopped", 0, 0, 0.5));
}

void ReadBoundsAndDuration(Args& args, v1::StartSessionRequest* req,
                           std::vector<std::string>* problems) {
  req->mutable_osp()->set_memory_entries(
      static_cast<int32_t>(args.GetInt("osp-entries", 0, 0, 1 << 24)));
  req->mutable_pcct()->set_max_depth(static_cast<int32_t>(args.GetInt("max-depth", 0, 0, 4096)));
  // The daemon counts whole seconds: 1500ms is refused rather than rounded.
  const double duration = args.GetDuration("duration", 0, 1, 0, kMaxU32);
  if (duration != static_cast<double>(static_cast<uint32_t>(duration)))
    problems->push_back(
        "--duration is whole seconds for a daemon session (such as 5s or 2m), got '" +
        args.Get("duration") + "'");
  req->mutable_duration()->set_seconds(static_cast<int64_t>(duration));
}

void PrintStarted(const v1::Session& resp, bool json) {
  if (json) {
    PrintJson(resp);
    return;
  }
  // The id alone (every command takes it as it is, or as sessions/ID), and first, so that
  // `ID=$(pathctl start ...)` and `| head -1` work.
  const std::string id = pathprof::api::SessionIdForDisplay(resp.name());
  std::printf("%s\n", id.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "session %s on %d process(es), branch source %s (%s)\n", id.c_str(),
               resp.pids_size(), BranchSourceName(resp.source()), resp.source_reason().c_str());
}

int RunStart(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  v1::StartSessionRequest req;
  std::vector<std::string> problems;
  ReadTarget(args, &req, &problems);
  ReadSourceStepAndStacks(args, &req, &problems);
  ReadEngine(args, &req, &problems);
  ReadSampling(args, &req);
  ReadBoundsAndDuration(args, &req, &problems);
  for (auto& p : args.Problems()) problems.push_back(p);
  if (!problems.empty()) return UsageError("start", problems);
  v1::Session resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().StartSession(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("start", s);
  PrintStarted(resp, json);
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "start",
    "start a profiling session in the daemon (prints its id)",
    "usage: pathctl start (-p PID | --name EXE | --cgroup PATH | --unit UNIT) [options]\n\n"
    "  -p, --pid PID     a process (all its threads)\n"
    "  --name EXE        the processes running executable EXE\n"
    "  --cgroup PATH     a cgroup's processes\n"
    "  --unit UNIT       a systemd unit's processes (nginx means nginx.service)\n"
    "  --source auto|none|ptrace|lbr|pt   branch source (default auto: the best the host has)\n"
    "  --step-mode auto|emulate|breakpoints|int3|step   how ptrace bursts step (default: the "
    "daemon's\n"
    "                    [ptrace] step_mode, auto: what `pathctl caps` found works best)\n"
    "  --path-kind ball-larus|wpp|extended-loops|extended-calls, --extension N\n"
    "  --max-length N    branches per path (1..64)      --hpt-entries N   Hot Path Table size\n"
    "  -F, --freq HZ     eBPF stack samples per second (0: off; formerly --stack-hz)\n"
    "  --window N        branches per window            --osp-entries N   OSP memory bound\n"
    "  --burst-rate R    ptrace bursts per second (formerly --bursts-per-second)\n"
    "  --max-stopped F   ptrace bursts: cap on the share of any second threads spend stopped\n"
    "  --max-depth N     PCCT depth bound\n"
    "  --duration DUR    stop after DUR: whole seconds, such as 30s or 2m (a bare number is\n"
    "                    seconds; default: until stopped)\n"
    "  --call-graph dwarf|fp  user stacks: DWARF CFI on a copy of the stack (default) or\n"
    "                    frame pointers alone\n"
    "  --inherit         profile the processes the targets fork from now on (stacks), at most\n"
    "                    --max-descendants N (default 4; each counts against the memory "
    "quota)\n" PATHCTL_CLIENT_USAGE,
    {"json", "inherit"},
    RunStart});

}  // namespace
}  // namespace pathctl
