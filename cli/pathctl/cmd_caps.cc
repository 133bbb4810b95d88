// pathctl caps: what this host can collect and why not. Probes locally, or asks the daemon
// (GetCapabilities) when --socket or --address names one.
#include <cstdio>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathprof/collectors/capabilities.h"

namespace pathctl {
namespace {

using pathprof::collectors::HostCapabilities;
using pathprof::collectors::SourceCapability;

int RunRemoteCaps(Client& client, bool json) {
  pathprof::v1::Capabilities c;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetCapabilities(ctx.get(), {}, &c);
  if (!s.ok()) return client.Fail("caps", s);
  const std::pair<const char*, const pathprof::v1::SourceCapability*> sources[] = {
      {"ebpf_stacks", &c.ebpf_stacks()},
      {"lbr", &c.lbr()},
      {"intel_pt", &c.intel_pt()},
      {"ptrace_bursts", &c.ptrace_bursts()}};
  if (json) {
    JsonWriter w;
    w.BeginObject();
    w.Key("daemon").String(client.target());
    w.Key("daemon_version").String(c.daemon_version());
    w.Key("kernel").String(c.kernel_release());
    w.Key("perf_event_paranoid").Int(c.perf_event_paranoid());
    for (const auto& [name, cap] : sources) {
      w.Key(name).BeginObject();
      w.Key("available").Bool(cap->available());
      w.Key("detail").String(cap->detail());
      w.EndObject();
    }
    w.Key("best_branch_source").String(BranchSourceName(c.best_branch_source()));
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("daemon %s (pathprofd %s): kernel %s, perf_event_paranoid=%d\n\n",
              client.target().c_str(), c.daemon_version().c_str(), c.kernel_release().c_str(),
              c.perf_event_paranoid());
  for (const auto& [name, cap] : sources)
    std::printf("  %-14s %-4s %s\n", name, cap->available() ? "yes" : "no", cap->detail().c_str());
  std::printf("\nbranch source for --source auto: %s\n", BranchSourceName(c.best_branch_source()));
  return kExitOk;
}

int RunCaps(Args& args) {
  bool json = args.Has("json");
  bool remote = args.Has("socket") || args.Has("address");
  Client client(args);
  if (auto p = args.Problems(); !p.empty()) return UsageError("caps", p);
  if (remote) return RunRemoteCaps(client, json);
  HostCapabilities h = pathprof::collectors::ProbeHostCapabilities();
  const std::pair<const char*, const SourceCapability*> sources[] = {{"ebpf_stacks", &h.ebpf},
                                                                     {"lbr", &h.lbr},
                                                                     {"intel_pt", &h.intel_pt},
                                                                     {"ptrace_bursts", &h.ptrace}};
  const char* best = pathprof::collectors::BranchSourceName(h.BestBranchSource());
  if (json) {
    JsonWriter w;
    w.BeginObject();
    w.Key("kernel").String(h.kernel_release);
    w.Key("perf_event_paranoid").Int(h.perf_event_paranoid);
    w.Key("root").Bool(h.is_root);
    for (const auto& [name, cap] : sources) {
      w.Key(name).BeginObject();
      w.Key("available").Bool(cap->available);
      w.Key("detail").String(cap->detail);
      w.EndObject();
    }
    w.Key("best_branch_source").String(best);
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("kernel %s, perf_event_paranoid=%d, %s\n\n", h.kernel_release.c_str(),
              h.perf_event_paranoid, h.is_root ? "root" : "not root");
  for (const auto& [name, cap] : sources)
    std::printf("  %-14s %-4s %s\n", name, cap->available ? "yes" : "no", cap->detail.c_str());
  std::printf("\nbranch source for --source auto: %s\n", best);
  return kExitOk;
}

PATHCTL_COMMAND(Command{"caps",
                        "what this host can collect (eBPF, LBR, Intel PT, ptrace) and why not",
                        "usage: pathctl caps [--json] [--socket PATH | --address HOST:PORT]\n\n"
                        "Probes each source by trying it and explains what is missing; with\n"
                        "--socket or --address, asks that daemon instead.",
                        {"json"},
                        RunCaps});

}  // namespace
}  // namespace pathctl
