// pathctl caps: what this host can collect and why not. Probes locally, or asks the daemon
// (GetCapabilities) when --socket or --address names one.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathctl/json_writer.h"
#include "pathprof/collectors/capabilities.h"

namespace pathctl {
namespace {

using pathprof::collectors::HostCapabilities;
using pathprof::collectors::SourceCapability;

const char* StepModeWord(pathprof::v1::StepMode m) {
  switch (m) {
    case pathprof::v1::STEP_MODE_BREAKPOINTS:
      return "breakpoints";
    case pathprof::v1::STEP_MODE_INT3:
      return "int3";
    default:
      return "step";
  }
}

std::vector<std::pair<const char*, const pathprof::v1::SourceCapability*>> RemoteMechanisms(
    const pathprof::v1::StepMechanisms& m) {
  return {{"breakpoints", &m.dr_breakpoints()},
          {"int3", &m.int3_breakpoints()},
          {"step", &m.single_step()},
          {"block_step", &m.block_step()}};
}

std::vector<std::pair<const char*, const pathprof::collectors::MechanismResult*>> LocalMechanisms(
    const pathprof::collectors::StepProbeResult& p) {
  return {{"breakpoints", &p.dr_breakpoints},
          {"int3", &p.int3_breakpoints},
          {"step", &p.single_step},
          {"block_step", &p.block_step}};
}

std::vector<std::pair<const char*, const pathprof::v1::SourceCapability*>> RemoteSources(
    const pathprof::v1::Capabilities& c) {
  return {{"ebpf_stacks", &c.ebpf_stacks()},
          {"lbr", &c.lbr()},
          {"intel_pt", &c.intel_pt()},
          {"ptrace_bursts", &c.ptrace_bursts()}};
}

std::vector<std::pair<const char*, const SourceCapability*>> LocalSources(
    const HostCapabilities& h) {
  return {{"ebpf_stacks", &h.ebpf},
          {"lbr", &h.lbr},
          {"intel_pt", &h.intel_pt},
          {"ptrace_bursts", &h.ptrace}};
}

void WriteRemoteStepMechanisms(const pathprof::v1::StepMechanisms& m, JsonWriter* w) {
  w->Key("step_mechanisms").BeginObject();
  for (const auto& [name, cap] : RemoteMechanisms(m)) {
    w->Key(name).BeginObject();
    w->Key("works").Bool(cap->available());
    w->Key("detail").String(cap->detail());
    w->EndObject();
  }
  w->Key("lost_trap_after").BeginArray();
  for (const std::string& n : m.lost_trap_after()) w->String(n);
  w->EndArray();
  w->Key("auto").String(StepModeWord(m.auto_step_mode()));
  w->EndObject();
}

void PrintRemoteCapsJson(const Client& client, const pathprof::v1::Capabilities& c) {
  JsonWriter w;
  w.BeginObject();
  w.Key("daemon").String(client.target());
  w.Key("daemon_version").String(c.daemon_version());
  w.Key("kernel").String(c.kernel_release());
  w.Key("perf_event_paranoid").Int(c.perf_event_paranoid());
  for (const auto& [name, cap] : RemoteSources(c)) {
    w.Key(name).BeginObject();
    w.Key("available").Bool(cap->available());
    w.Key("detail").String(cap->detail());
    w.EndObject();
  }
  w.Key("best_branch_source").String(BranchSourceName(c.best_branch_source()));
  if (c.has_step_mechanisms()) WriteRemoteStepMechanisms(c.step_mechanisms(), &w);
  w.Key("simulated_quirks").String(c.simulated_quirks());
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintRemoteCapsText(const Client& client, const pathprof::v1::Capabilities& c) {
  std::printf("daemon %s (pathprofd %s): kernel %s, perf_event_paranoid=%d\n\n",
              client.target().c_str(), c.daemon_version().c_str(), c.kernel_release().c_str(),
              c.perf_event_paranoid());
  for (const auto& [name, cap] : RemoteSources(c))
    std::printf("  %-14s %-4s %s\n", name, cap->available() ? "yes" : "no", cap->detail().c_str());
  std::printf("\nbranch source for --source auto: %s\n", BranchSourceName(c.best_branch_source()));
  if (c.has_step_mechanisms()) {
    std::printf("\nhow ptrace bursts can step a thread here (probed on a throwaway child):\n");
    for (const auto& [name, cap] : RemoteMechanisms(c.step_mechanisms()))
      std::printf("  %-14s %-4s %s\n", name, cap->available() ? "yes" : "no",
                  cap->detail().c_str());
    std::printf("step mode for --step-mode auto: %s\n",
                StepModeWord(c.step_mechanisms().auto_step_mode()));
  }
  if (!c.simulated_quirks().empty())
    std::printf("\nSIMULATED host quirks (PATHPROF_SIMULATE_QUIRKS, for tests): %s\n",
                c.simulated_quirks().c_str());
}

int RunRemoteCaps(Client& client, bool json) {
  pathprof::v1::Capabilities c;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetCapabilities(ctx.get(), {}, &c);
  if (!s.ok()) return client.Fail("caps", s);
  if (json)
    PrintRemoteCapsJson(client, c);
  else
    PrintRemoteCapsText(client, c);
  return kExitOk;
}

void WriteLocalStepMechanisms(const pathprof::collectors::StepProbeResult& p, JsonWriter* w) {
  w->Key("step_mechanisms").BeginObject();
  for (const auto& [name, m] : LocalMechanisms(p)) {
    w->Key(name).BeginObject();
    w->Key("works").Bool(m->works);
    w->Key("detail").String(m->detail);
    w->EndObject();
  }
  w->Key("lost_trap_after").BeginArray();
  for (const std::string& n : p.lost_trap_after) w->String(n);
  w->EndArray();
  w->Key("auto").String(std::string(pathprof::collectors::StepModeName(p.BestMode())));
  w->Key("single_step_us").Double(static_cast<double>(p.single_step_ns) / 1000);
  w->Key("int3_leg_us").Double(static_cast<double>(p.int3_leg_ns) / 1000);
  w->Key("dr_leg_us").Double(static_cast<double>(p.dr_leg_ns) / 1000);
  w->Key("cached").Bool(p.from_cache);
  w->EndObject();
}

void PrintLocalCapsJson(const HostCapabilities& h) {
  JsonWriter w;
  w.BeginObject();
  w.Key("kernel").String(h.kernel_release);
  w.Key("perf_event_paranoid").Int(h.perf_event_paranoid);
  w.Key("root").Bool(h.is_root);
  for (const auto& [name, cap] : LocalSources(h)) {
    w.Key(name).BeginObject();
    w.Key("available").Bool(cap->available);
    w.Key("detail").String(cap->detail);
    w.EndObject();
  }
  w.Key("best_branch_source").String(pathprof::collectors::BranchSourceName(h.BestBranchSource()));
  if (h.step_probe.ran) WriteLocalStepMechanisms(h.step_probe, &w);
  w.Key("simulated_quirks").String(h.simulated_quirks);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintLocalStepMechanisms(const pathprof::collectors::StepProbeResult& p) {
  std::printf("\nhow ptrace bursts can step a thread here (probed on a throwaway child%s):\n",
              p.from_cache ? ", cached for this boot" : "");
  for (const auto& [name, m] : LocalMechanisms(p))
    std::printf("  %-14s %-4s %s\n", name, m->works ? "yes" : "no", m->detail.c_str());
  if (!p.not_probed.empty()) {
    std::string names;
    for (const std::string& n : p.not_probed) names += " " + n;
    std::printf("  (refused by this CPU, not probed:%s)\n", names.c_str());
  }
  std::printf("step mode for --step-mode auto: %s\n",
              std::string(pathprof::collectors::StepModeName(p.BestMode())).c_str());
}

void PrintLocalCapsText(const HostCapabilities& h) {
  std::printf("kernel %s, perf_event_paranoid=%d, %s\n\n", h.kernel_release.c_str(),
              h.perf_event_paranoid, h.is_root ? "root" : "not root");
  for (const auto& [name, cap] : LocalSources(h))
    std::printf("  %-14s %-4s %s\n", name, cap->available ? "yes" : "no", cap->detail.c_str());
  std::printf("\nbranch source for --source auto: %s\n",
              pathprof::collectors::BranchSourceName(h.BestBranchSource()));
  if (h.step_probe.ran) PrintLocalStepMechanisms(h.step_probe);
  if (!h.simulated_quirks.empty())
    std::printf("\nSIMULATED host quirks (PATHPROF_SIMULATE_QUIRKS, for tests): %s\n",
                h.simulated_quirks.c_str());
}

int RunCaps(Args& args) {
  bool json = args.Has("json");
  bool remote = args.Has("socket") || args.Has("address");
  if (remote) {
    Client client(args);
    if (auto p = args.Problems(); !p.empty()) return UsageError("caps", p);
    return RunRemoteCaps(client, json);
  }
  // The local probe connects nowhere: --timeout and --tls-* are left unread, so Problems() says
  // they do not apply without --socket or --address.
  if (auto p = args.Problems(); !p.empty()) return UsageError("caps", p);
  const HostCapabilities h = pathprof::collectors::ProbeHostCapabilities();
  if (json)
    PrintLocalCapsJson(h);
  else
    PrintLocalCapsText(h);
  return kExitOk;
}

PATHCTL_COMMAND(Command{"caps",
                        "what this host can collect (eBPF, LBR, Intel PT, ptrace) and why not",
                        "usage: pathctl caps [--json] [--socket PATH | --address HOST:PORT]\n\n"
                        "Probes each source by trying it and explains what is missing; with\n"
                        "--socket or --address, asks that daemon instead:\n" PATHCTL_CLIENT_USAGE,
                        {"json"},
                        RunCaps});

}  // namespace
}  // namespace pathctl
