// pathctl stats [SESSION]: the pipeline's accounting per target and the daemon's own cost.
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunStats(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().size() > 1) problems.push_back("expected at most one SESSION id");
  if (!problems.empty()) return UsageError("stats", problems);
  pathprof::v1::GetStatsRequest req;
  if (!args.positional().empty()) req.set_session(SessionNameFromUser(args.positional()[0]));
  pathprof::v1::Stats resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetStats(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("stats", s);
  if (json) {
    PrintJson(resp);
    return kExitOk;
  }
  std::printf("daemon: %.2f s CPU, %.1f MiB resident, %u clients, %u streams\n",
              resp.daemon_cpu_seconds(), resp.daemon_rss_bytes() / 1048576.0, resp.clients(),
              resp.streams());
  std::printf("sessions: %u held of %u; their profiles may take %.0f of %.0f MiB\n",
              resp.sessions_held(), resp.sessions_limit(),
              resp.sessions_memory_bound_bytes() / 1048576.0,
              resp.sessions_memory_limit_bytes() / 1048576.0);
  PrintTargetStats(resp.targets());
  return kExitOk;
}

PATHCTL_COMMAND(Command{"stats", "the daemon's accounting: samples, drops, CPU and memory",
                        "usage: pathctl stats [SESSION]", ClientFlags(), RunStats});

}  // namespace
}  // namespace pathctl
