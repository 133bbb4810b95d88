// pathctl session ID: one daemon session (GetSession), with the settings it runs with.
#include <google/protobuf/util/time_util.h>

#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

namespace v1 = pathprof::v1;

std::string TargetText(const v1::SessionTarget& t) {
  switch (t.selector_case()) {
    case v1::SessionTarget::kPid:
      return "pid " + std::to_string(t.pid());
    case v1::SessionTarget::kExecutableName:
      return "processes named " + t.executable_name();
    case v1::SessionTarget::kCgroup:
      return "cgroup " + t.cgroup();
    case v1::SessionTarget::kSystemdUnit:
      return "unit " + t.systemd_unit();
    case v1::SessionTarget::SELECTOR_NOT_SET:
      break;
  }
  return "-";  // imported from a recording
}

void PrintSession(const v1::Session& x) {
  using google::protobuf::util::TimeUtil;
  std::string pids;
  for (int32_t p : x.pids()) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  const v1::SessionSettings& st = x.settings();
  std::printf("session   %s\n", SessionIdForDisplay(x.name()).c_str());
  std::printf("state     %s%s%s\n", SessionStateName(x.state()), x.error().empty() ? "" : ": ",
              x.error().c_str());
  std::printf("target    %s (pids %s), owner uid %d\n", TargetText(x.target()).c_str(),
              pids.c_str(), x.owner_uid());
  // The reason says whether the source was asked for or auto's choice, and why.
  std::printf("source    %s: %s\n", BranchSourceName(x.source()), x.source_reason().c_str());
  std::printf("started   %s\n", TimeUtil::ToString(x.start_time()).c_str());
  if (x.has_end_time()) std::printf("ended     %s\n", TimeUtil::ToString(x.end_time()).c_str());
  std::printf("memory    at most %.1f MiB\n",
              static_cast<double>(x.memory_bound_bytes()) / 1048576);
  std::printf("engine    %s, max path %d, HPT %d entries x %d ways, %s\n",
              v1::PathKind_Name(st.engine().path_kind()).c_str(), st.engine().max_path_length(),
              st.engine().hpt_entries(), st.engine().hpt_ways(),
              v1::Metric_Name(st.engine().metric()).c_str());
  std::printf("sampling  stacks %d Hz, window %d branches, %s\n", st.sampling().stack_hz(),
              st.sampling().window_branches(),
              v1::StepMode_Name(st.sampling().step_mode()).c_str());
  std::printf("osp       %d entries, subpaths up to %d blocks\n", st.osp().memory_entries(),
              st.osp().max_length());
  std::printf("pcct      depth %d, %d nodes\n", st.pcct().max_depth(), st.pcct().max_nodes());
  std::printf("duration  %s\n", st.duration().seconds()
                                    ? (std::to_string(st.duration().seconds()) + " s").c_str()
                                    : "until stopped");
}

int RunSession(Args& args) {
  Client client(args);
  const bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("session", problems);
  v1::GetSessionRequest req;
  req.set_name(SessionNameFromUser(args.positional()[0]));
  v1::Session resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetSession(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("session", s);
  if (json)
    PrintJson(resp);
  else
    PrintSession(resp);
  return kExitOk;
}

PATHCTL_COMMAND(Command{"session", "show one daemon session and the settings it runs with",
                        "usage: pathctl session SESSION", ClientFlags(), RunSession});

}  // namespace
}  // namespace pathctl
