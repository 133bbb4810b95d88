// pathctl start: begins a profiling session in the daemon and prints its id.
#include <cstdio>

#include "pathctl/client.h"
#include "pathctl/session_flags.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/pipeline/session_defaults.h"

namespace pathctl {
namespace {
namespace v1 = pathprof::v1;

// The targets' flags: exactly one is given.
constexpr const char* kTargets[] = {"pid", "name", "cgroup", "unit"};

// The request the flags ask for, each flag setting its declared field (request_fields.h), and
// the usage problems found.
std::vector<std::string> ReadRequest(Args& args, const std::vector<Flag>& flags,
                                     v1::CreateSessionRequest* req) {
  std::vector<std::string> problems;
  int targets = 0;
  for (const char* t : kTargets) targets += args.Has(t);
  if (targets != 1) problems.push_back("give exactly one of --pid, --name, --cgroup, --unit");
  // Children are followed only when asked: pathprof::pipeline::kSessionDefaults says so for
  // start and the daemon (session_flags.h says why run differs).
  ReadSessionRequest(args, flags, pathprof::pipeline::kSessionDefaults.follow_children, req,
                     &problems);
  // The daemon counts whole seconds: 1500ms is refused rather than rounded.
  if (args.Has("duration") && req->session().settings().duration().nanos() != 0)
    problems.push_back(
        "--duration is whole seconds for a daemon session (such as 5s or 2m), got '" +
        args.Get("duration") + "'");
  for (auto& p : args.Problems()) problems.push_back(p);
  return problems;
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

std::vector<Flag> StartFlags();

int RunStart(Args& args) {
  Client client(args);
  const bool json = args.Has("json");
  v1::CreateSessionRequest req;
  if (auto problems = ReadRequest(args, StartFlags(), &req); !problems.empty())
    return UsageError("start", problems);
  v1::Session resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().CreateSession(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("start", s);
  PrintStarted(resp, json);
  return kExitOk;
}

// The targets, then the session flags start shares with run (session_flags.h), then the
// daemon's connection flags.
std::vector<Flag> StartFlags() {
  return Concat(
      Concat(
          {IntFlag("pid", "PID", "", 1, kMaxPid, "a process (all its threads)")
               .Short("-p")
               .Sets("session.target.pid"),
           StringFlag("name", "EXE", "", "the processes running executable EXE")
               .Sets("session.target.executable_name"),
           StringFlag("cgroup", "PATH", "", "a cgroup's processes").Sets("session.target.cgroup"),
           StringFlag("unit", "UNIT", "", "a systemd unit's processes (nginx means nginx.service)")
               .Sets("session.target.systemd_unit")},
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
