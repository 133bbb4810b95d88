// pathctl start: begins a profiling session in the daemon and prints its id.
#include <cstdio>

#include "pathctl/client.h"
#include "pathctl/session_flags.h"
#include "pathprof/api/convert.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/pipeline/session_defaults.h"

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

// Each Read* fills its part of the request and appends its usage problems. A session flag not
// given leaves its field unset: the daemon then takes pipeline::kSessionDefaults' value, the
// default the usage shows (session_flags.h).

void ReadTarget(Args& args, v1::StartSessionRequest* req, std::vector<std::string>* problems) {
  int targets = 0;
  if (args.Has("pid")) {  // -p is its short spelling (Args)
    req->set_pid(static_cast<int32_t>(args.Int("pid")));
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

// The words were checked against these parsers' pipeline twins when the command line was read;
// these give the request's enum.
void ReadSourceStepAndStacks(Args& args, v1::StartSessionRequest* req,
                             std::vector<std::string>* problems) {
  v1::SourceChoice src = v1::SOURCE_CHOICE_AUTO;
  if (!ParseSource(args.Get("source"), &src))
    problems->push_back("--source is auto, none, ptrace, lbr or pt");
  req->set_source(src);
  // Without --step-mode the request leaves it unset: the daemon's [ptrace] step_mode decides.
  v1::StepMode step = v1::STEP_MODE_UNSPECIFIED;
  if (args.Has("step-mode") && !ParseStepMode(args.Get("step-mode"), &step))
    problems->push_back("--step-mode is auto, emulate, breakpoints, int3 or step");
  req->mutable_sampling()->set_step_mode(step);
  pathprof::pipeline::CallGraph call_graph = pathprof::pipeline::CallGraph::kDwarf;
  uint32_t stack_copy_bytes = 0;  // 0: not given, the daemon's default
  if (pathprof::pipeline::ParseCallGraphSpec(args.Get("call-graph"), &call_graph,
                                             &stack_copy_bytes)) {
    req->mutable_sampling()->set_call_graph(pathprof::api::ToProto(call_graph));
    req->mutable_sampling()->set_stack_copy_bytes(static_cast<int32_t>(stack_copy_bytes));
  } else {
    problems->push_back("--call-graph is fp, dwarf or dwarf,SIZE (SIZE 4096..65536 bytes)");
  }
  req->set_follow_children(
      FollowChildren(args, pathprof::pipeline::kSessionDefaults.follow_children, problems));
  // Without following children no descendant is profiled: --max-descendants is left unread
  // (reported as not applying).
  if (req->follow_children() && args.Has("max-descendants"))
    req->set_max_descendants(static_cast<int32_t>(args.Int("max-descendants")));
}

void ReadEngine(Args& args, v1::StartSessionRequest* req, std::vector<std::string>* problems) {
  v1::PathKind kind = v1::PATH_KIND_UNSPECIFIED;
  if (!ParseKind(args.Get("path-kind"), &kind))
    problems->push_back("--path-kind is ball-larus, wpp, extended-loops or extended-calls");
  v1::EngineSettings& engine = *req->mutable_engine();
  engine.set_path_kind(kind);
  if (args.Has("extension")) engine.set_extension(static_cast<int32_t>(args.Int("extension")));
  if (args.Has("max-length"))
    engine.set_max_path_length(static_cast<int32_t>(args.Int("max-length")));
  if (args.Has("hpt-entries"))
    engine.set_hpt_entries(static_cast<int32_t>(args.Int("hpt-entries")));
}

void ReadSampling(Args& args, v1::StartSessionRequest* req) {
  v1::SamplingSettings& sampling = *req->mutable_sampling();
  if (args.Has("freq"))  // -F and the older --stack-hz are its other spellings (Args)
    sampling.set_stack_hz(static_cast<int32_t>(args.Int("freq")));
  if (args.Has("window")) sampling.set_window_branches(static_cast<int32_t>(args.Int("window")));
  if (args.Has("burst-rate")) sampling.set_bursts_per_second(args.Double("burst-rate"));
  if (args.Has("max-stopped")) sampling.set_max_stopped_fraction(args.Double("max-stopped"));
}

void ReadBoundsAndDuration(Args& args, v1::StartSessionRequest* req,
                           std::vector<std::string>* problems) {
  if (args.Has("osp-entries"))
    req->mutable_osp()->set_memory_entries(static_cast<int32_t>(args.Int("osp-entries")));
  if (args.Has("max-depth"))
    req->mutable_pcct()->set_max_depth(static_cast<int32_t>(args.Int("max-depth")));
  // The daemon counts whole seconds: 1500ms is refused rather than rounded.
  const double duration = args.Seconds("duration");
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
  std::fprintf(stderr, "session %s on %d process(es), branch source %s: %s\n", id.c_str(),
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

// The targets, then the session flags start shares with run (session_flags.h), then the
// daemon's connection flags.
std::vector<Flag> StartFlags() {
  return Concat(Concat({IntFlag("pid", "PID", "", 1, kMaxPid, "a process (all its threads)")
                            .Short("-p")
                            .Sets("pid"),
                        StringFlag("name", "EXE", "", "the processes running executable EXE")
                            .Sets("executable_name"),
                        StringFlag("cgroup", "PATH", "", "a cgroup's processes").Sets("cgroup"),
                        StringFlag("unit", "UNIT", "",
                                   "a systemd unit's processes (nginx means nginx.service)")
                            .Sets("systemd_unit")},
                       SessionFlags(pathprof::pipeline::kSessionDefaults.follow_children)),
                ClientFlags());
}

PATHCTL_COMMAND(Command{
    "start", "start a profiling session in the daemon (prints its id)",
    "usage: pathctl start (-p PID | --name EXE | --cgroup PATH | --unit UNIT) [options]\n\n"
    "Starts a session in the daemon on the target and prints its id (first, alone on its line).\n"
    "The session flags are pathctl run's, with the same defaults; a flag not given leaves the\n"
    "request's field unset, which the daemon fills with that same default, but for one:\n"
    "children the targets fork are followed only with --inherit (pathctl run follows them\n"
    "unless --no-inherit). A session attaches to processes already running, often a server\n"
    "whose workers come and go: each child followed gets tables of its own, charged against\n"
    "the daemon's memory quota, so following them is asked for, not assumed.",
    StartFlags(), RunStart});

}  // namespace
}  // namespace pathctl
