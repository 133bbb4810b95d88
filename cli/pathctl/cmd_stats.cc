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
  std::printf("%-10s %7s %10s %9s %12s %8s %9s  %s\n", "SESSION", "PID", "STACKS", "WINDOWS",
              "BRANCHES", "CPU s", "MEM MiB", "DROPS / DECODE ERRORS");
  for (const auto& t : resp.targets()) {
    std::string lost;
    for (const auto& d : t.drops())
      lost += (lost.empty() ? "" : " ") + d.reason() + "=" + std::to_string(d.count());
    for (const auto& d : t.decode_errors())
      lost += (lost.empty() ? "" : " ") + d.reason() + "=" + std::to_string(d.count());
    std::printf(
        "%-10s %7u %10llu %9llu %12llu %8.2f %9.1f  %s\n", SessionIdForDisplay(t.session()).c_str(),
        t.pid(), static_cast<unsigned long long>(t.stack_samples()),
        static_cast<unsigned long long>(t.windows()), static_cast<unsigned long long>(t.branches()),
        t.pipeline_cpu_seconds(), t.memory_bytes() / 1048576.0, lost.empty() ? "-" : lost.c_str());
  }
  for (const auto& t : resp.targets()) {
    if (t.namespace_pid() != 0)
      std::printf("%s pid %u: pid %u in its own pid namespace (a container)\n",
                  SessionIdForDisplay(t.session()).c_str(), t.pid(), t.namespace_pid());
    if (!t.window_weighting().empty())
      std::printf("%s pid %u: windows weighted by %s\n", SessionIdForDisplay(t.session()).c_str(),
                  t.pid(), t.window_weighting().c_str());
  }
  return kExitOk;
}

PATHCTL_COMMAND(Command{"stats", "the daemon's accounting: samples, drops, CPU and memory",
                        "usage: pathctl stats [SESSION]", ClientFlags(), RunStats});

}  // namespace
}  // namespace pathctl
