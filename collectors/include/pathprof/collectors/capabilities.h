// What this host can collect, and why not: probed by trying, not guessed from versions alone.
#pragma once

#include <string>
#include <string_view>

#include "pathprof/core/enum_words.h"
#include "pathprof/stepping/step_probe.h"

namespace pathprof::collectors {

struct SourceCapability {
  bool available = false;
  std::string detail;  // what was found, or why it is missing and what would fix it
};

// kHybrid: snapshot windows, and stop-and-emulate windows (ptrace) for the processes whose
// snapshot windows end too early (pipeline/src/live_source_hybrid.cc).
enum class BranchSource { kNone, kPtraceBursts, kLbr, kIntelPt, kSnapshot, kHybrid };
// The one vocabulary of branch sources (--source, config files, printouts); api/ maps them to
// pathprof.v1.BranchSource, pipeline::SourceChoice adds "auto".
inline constexpr EnumWords<BranchSource, 6> kBranchSourceWords{{
    {BranchSource::kNone, "none"},
    {BranchSource::kPtraceBursts, "ptrace"},
    {BranchSource::kLbr, "lbr"},
    {BranchSource::kIntelPt, "pt"},
    {BranchSource::kSnapshot, "snapshot"},
    {BranchSource::kHybrid, "hybrid"},
}};
std::string_view BranchSourceName(BranchSource source);
// Parses "none", "ptrace", "lbr", "pt", "snapshot", "hybrid"; returns false for anything else.
bool ParseBranchSource(std::string_view name, BranchSource* out);

struct HostCapabilities {
  std::string kernel_release;
  int perf_event_paranoid = 2;
  int yama_ptrace_scope = -1;  // -1: Yama not present
  bool is_root = false;
  bool cap_bpf = false, cap_perfmon = false, cap_sys_ptrace = false, cap_sys_admin = false;

  SourceCapability ebpf;  // stack sampler: BTF, ring buffers, perf_event programs
  SourceCapability lbr;   // perf_event_open with PERF_SAMPLE_BRANCH_STACK
  SourceCapability intel_pt;
  SourceCapability ptrace;  // software LBR (bursts) and the exact tracer
  // Windows emulated from the eBPF sampler's snapshots (no stop, no ptrace): what the stack
  // sampler needs.
  SourceCapability snapshot;
  // How threads can be stepped here (probed on a throwaway child; empty when ptrace itself is
  // refused). `ptrace` is available only when some step mechanism works.
  stepping::StepProbeResult step_probe;
  std::string simulated_quirks;  // PATHPROF_SIMULATE_QUIRKS in effect (tests only), or ""

  // PT > LBR > ptrace bursts > snapshot windows, the best branch source that works here.
  // Snapshot windows come after ptrace bursts: they cost the target far less, but on real
  // programs end after a few taken branches at their default copy (docs/performance.md
  // "Snapshot windows from the sampler"), where a stopped thread's window runs all 32.
  BranchSource BestBranchSource() const;
};

HostCapabilities ProbeHostCapabilities();

}  // namespace pathprof::collectors
