// pathctl caps: what this host can collect and why not. Probes locally, or asks the daemon
// (GetCapabilities) when --socket or --address names one. Either way the answer is one
// v1::Capabilities, converted by the daemon's own api::ToProto, so --json is the same document.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pathctl/client.h"
#include "pathctl/command.h"
#include "pathprof/api/convert.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/collectors/capabilities.h"
#include "pathprof/stepping/step_probe.h"

namespace pathctl {
namespace {

namespace v1 = pathprof::v1;

// A daemon leaves the mode unset only where none works: the tracer would single-step then.
std::string StepModeWord(v1::StepMode m) {
  return std::string(pathprof::api::StepModeWord(
      m, pathprof::stepping::StepModeName(pathprof::stepping::StepMode::kSingleStep)));
}

pathprof::stepping::MechanismResult FromProto(const v1::SourceCapability& c) {
  return {c.available(), c.detail()};
}

uint64_t Ns(double us) {
  return static_cast<uint64_t>(std::llround(us * 1000.0));
}

// The probe's result as the local probe or a daemon reported it: what the decision reads.
pathprof::stepping::StepProbeResult ProbeFromProto(const v1::StepMechanisms& m) {
  pathprof::stepping::StepProbeResult p;
  p.ran = true;  // a result without a probe run has no step_mechanisms
  p.single_step = FromProto(m.single_step());
  p.dr_breakpoints = FromProto(m.dr_breakpoints());
  p.int3_breakpoints = FromProto(m.int3_breakpoints());
  p.block_step = FromProto(m.block_step());
  p.emulate = FromProto(m.emulate());
  p.single_step_ns = Ns(m.single_step_us());
  p.int3_leg_ns = Ns(m.int3_leg_us());
  p.dr_leg_ns = Ns(m.dr_leg_us());
  p.emulate_window_ns = Ns(m.emulate_window_us());
  return p;
}

void PrintRows(const std::vector<std::pair<const char*, const v1::SourceCapability*>>& rows) {
  for (const auto& [name, cap] : rows)
    std::printf("  %-16s %-4s %s\n", name, cap->available() ? "yes" : "no", cap->detail().c_str());
}

void PrintStepMechanisms(const v1::StepMechanisms& m) {
  std::printf("\nhow ptrace bursts can step a thread here (probed on a throwaway child%s):\n",
              m.from_cache() ? ", cached for this boot" : "");
  using pathprof::stepping::StepMode;
  auto word = [](StepMode mode) { return pathprof::stepping::StepModeName(mode).data(); };
  PrintRows({{word(StepMode::kEmulate), &m.emulate()},
             {word(StepMode::kBreakpoints), &m.dr_breakpoints()},
             {word(StepMode::kInt3), &m.int3_breakpoints()},
             {word(StepMode::kSingleStep), &m.single_step()},
             {"block_step", &m.block_step()}});
  if (m.not_probed_size() > 0) {
    std::string names;
    for (const std::string& n : m.not_probed()) names += " " + n;
    std::printf("  (refused by this CPU, not probed:%s)\n", names.c_str());
  }
  // The reason comes from the same decision the tracer makes, run on the probe as reported.
  const pathprof::stepping::StepModeChoice choice =
      pathprof::stepping::ChooseStepMode(std::nullopt, ProbeFromProto(m));
  const std::string mode = StepModeWord(m.auto_step_mode());
  const std::string mine(pathprof::stepping::StepModeName(choice.mode));
  if (mine == mode)
    std::printf("step mode for --step-mode auto: %s (%s)\n", mode.c_str(), choice.reason.c_str());
  else  // a daemon of another version decides otherwise
    std::printf("step mode for --step-mode auto: %s (this pathctl would choose %s: %s)\n",
                mode.c_str(), mine.c_str(), choice.reason.c_str());
}

// `daemon`: the address that answered, or empty when pathctl probed the host itself.
void PrintText(const v1::Capabilities& c, const std::string& daemon) {
  if (!daemon.empty())
    std::printf("daemon %s (pathprofd %s): ", daemon.c_str(), c.daemon_version().c_str());
  std::printf("kernel %s, perf_event_paranoid=%d, %s\n\n", c.kernel_release().c_str(),
              c.perf_event_paranoid(), c.running_as_root() ? "root" : "not root");
  PrintRows({{"ebpf_stacks", &c.ebpf_stacks()},
             {"lbr", &c.lbr()},
             {"intel_pt", &c.intel_pt()},
             {"ptrace_bursts", &c.ptrace_bursts()},
             {"snapshot_windows", &c.snapshot_windows()}});
  std::printf("\nbranch source for --source auto: %s\n", BranchSourceName(c.best_branch_source()));
  if (c.has_step_mechanisms()) PrintStepMechanisms(c.step_mechanisms());
  if (!c.simulated_quirks().empty())
    std::printf("\nSIMULATED host quirks (PATHPROF_SIMULATE_QUIRKS, for tests): %s\n",
                c.simulated_quirks().c_str());
}

int RunCaps(Args& args) {
  const bool json = args.Has("json");
  v1::Capabilities caps;
  std::string daemon;
  if (args.Has("socket") || args.Has("address")) {
    Client client(args);
    if (auto p = args.Problems(); !p.empty()) return UsageError("caps", p);
    auto ctx = client.Context();
    grpc::Status s = client.stub().GetCapabilities(ctx.get(), {}, &caps);
    if (!s.ok()) return client.Fail("caps", s);
    daemon = client.target();
  } else {
    // The local probe connects nowhere: --timeout and --tls-* are left unread, so Problems()
    // says they do not apply without --socket or --address.
    if (auto p = args.Problems(); !p.empty()) return UsageError("caps", p);
    pathprof::api::ToProto(pathprof::collectors::ProbeHostCapabilities(), &caps);
  }
  json ? PrintJson(caps) : PrintText(caps, daemon);
  return kExitOk;
}

PATHCTL_COMMAND(Command{"caps",
                        "what this host can collect (eBPF, LBR, Intel PT, ptrace) and why not",
                        "usage: pathctl caps [--json] [--socket PATH | --address HOST:PORT]\n\n"
                        "Probes each source by trying it and explains what is missing; with\n"
                        "--socket or --address, asks that daemon instead.",
                        ClientFlags(), RunCaps});

}  // namespace
}  // namespace pathctl
