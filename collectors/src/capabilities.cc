#include "pathprof/collectors/capabilities.h"

#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pathprof/core/host_quirks.h"
#include "pathprof/core/procfs.h"
#include "pathprof/core/sysfs.h"

namespace pathprof::collectors {
namespace {

// The effective capability set, straight from capget(2) (no libcap dependency for four bits).
void ReadCapabilities(HostCapabilities* h) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return;
  auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1; };
  h->cap_sys_admin = has(CAP_SYS_ADMIN);
  h->cap_sys_ptrace = has(CAP_SYS_PTRACE);
#ifdef CAP_BPF
  h->cap_bpf = has(CAP_BPF) || h->cap_sys_admin;
  h->cap_perfmon = has(CAP_PERFMON) || h->cap_sys_admin;
#else
  h->cap_bpf = h->cap_perfmon = h->cap_sys_admin;
#endif
}

// Opens a sampling event on this thread with the given attr; returns 0 or errno.
int TryPerfEvent(perf_event_attr attr) {
  attr.size = sizeof(attr);
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

std::string PerfErrno(int err, const HostCapabilities& h) {
  switch (err) {
    case ENOENT:
    case ENODEV:
      return "no hardware PMU (typical of a VM without PMU passthrough)";
    case EOPNOTSUPP:
      return "the PMU has no branch-stack support (not an Intel LBR CPU?)";
    case EACCES:
    case EPERM:
      return "refused: perf_event_paranoid=" + std::to_string(h.perf_event_paranoid) +
             "; run as root or with CAP_PERFMON";
    default:
      return std::string("perf_event_open failed: ") + std::strerror(err);
  }
}

void ProbeEbpf(HostCapabilities* h) {
  if (!sysfs::Sysfs::Host().Exists("kernel/btf/vmlinux")) {
    h->ebpf.detail = "no kernel BTF at /sys/kernel/btf/vmlinux (needs CONFIG_DEBUG_INFO_BTF=y)";
    return;
  }
  if (!h->cap_bpf || !h->cap_perfmon) {
    h->ebpf.detail = "needs root or CAP_BPF and CAP_PERFMON";
    return;
  }
  if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, nullptr) != 1) {
    h->ebpf.detail = "the kernel refused a perf_event BPF program";
    return;
  }
  if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr) != 1) {
    h->ebpf.detail = "no BPF ring buffer (needs Linux 5.8 or newer)";
    return;
  }
  // The sampler's snapshot loops are bpf_loop callbacks (the verifier walks them once).
  if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr) != 1) {
    h->ebpf.detail = "no bpf_loop helper (needs Linux 5.17 or newer)";
    return;
  }
  h->ebpf.available = true;
  h->ebpf.detail = "BTF, perf_event programs and ring buffers available";
}

// Snapshot windows need the sampler and nothing else (no ptrace); their verify mode (tests,
// benchmarks) also signals the sampled thread from the program.
void ProbeSnapshot(HostCapabilities* h) {
  if (!h->ebpf.available) {
    h->snapshot.detail = "needs the eBPF stack sampler: " + h->ebpf.detail;
    return;
  }
  h->snapshot.available = true;
  const bool verify =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_send_signal_thread, nullptr) == 1;
  h->snapshot.detail = std::string("windows emulated from the sampler's snapshots, no ptrace") +
                       (verify ? "; verify mode available (bpf_send_signal_thread)"
                               : "; no verify mode (bpf_send_signal_thread missing)");
}

void ProbeLbr(HostCapabilities* h) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.sample_period = 100003;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK;
  attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
  int err = TryPerfEvent(attr);
  h->lbr.available = err == 0;
  h->lbr.detail = err == 0 ? "perf branch-stack sampling works" : PerfErrno(err, *h);
}

void ProbeIntelPt(HostCapabilities* h) {
  int type = sysfs::Sysfs::Host().ReadInt("bus/event_source/devices/intel_pt/type", -1);
  if (type < 0) {
    h->intel_pt.detail = "no intel_pt PMU in /sys/bus/event_source/devices (not Intel, or a VM)";
    return;
  }
  perf_event_attr attr{};
  attr.type = static_cast<uint32_t>(type);
  int err = TryPerfEvent(attr);
  h->intel_pt.available = err == 0;
  h->intel_pt.detail = err == 0 ? "intel_pt PMU type " + std::to_string(type) : PerfErrno(err, *h);
}

void ProbePtrace(HostCapabilities* h) {
  if (h->yama_ptrace_scope == 3) {
    h->ptrace.detail = "Yama ptrace_scope=3 forbids all ptrace attach";
    return;
  }
  // Attach for real to a child of ours: the only reliable answer (seccomp, LSMs, containers).
  pid_t child = fork();
  if (child < 0) {
    h->ptrace.detail = std::string("fork failed: ") + std::strerror(errno);
    return;
  }
  if (child == 0) {
    pause();
    _exit(0);
  }
  int rc = static_cast<int>(ptrace(PTRACE_SEIZE, child, nullptr, nullptr));
  int err = errno;
  if (rc == 0) ptrace(PTRACE_DETACH, child, nullptr, nullptr);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (rc != 0) {
    h->ptrace.detail = std::string("PTRACE_SEIZE refused: ") + std::strerror(err);
    return;
  }
  // Seizing works; whether a thread can then be stepped is the hypervisor's business.
  h->step_probe = stepping::CachedStepProbe();
  const stepping::StepProbeResult& p = h->step_probe;
  if (!p.ran || !p.AnyWorks()) {
    h->ptrace.detail = "PTRACE_SEIZE works, but no way to step a thread does: " +
                       (p.ran ? p.single_step.detail : p.error);
    return;
  }
  h->ptrace.available = true;
  const stepping::StepModeChoice choice = stepping::ChooseStepMode(std::nullopt, p);
  h->ptrace.detail = "PTRACE_SEIZE works; bursts step with " +
                     std::string(stepping::StepModeName(choice.mode)) + " (" + choice.reason + ")";
  if (!p.dr_breakpoints.works) h->ptrace.detail += " (debug-register breakpoints never fire here)";
  if (!p.lost_trap_after.empty()) {
    std::string names;
    for (const std::string& n : p.lost_trap_after) names += (names.empty() ? "" : ", ") + n;
    h->ptrace.detail += "; single-step trap lost after " + names + " (decoded across)";
  }
  if (h->yama_ptrace_scope >= 1 && !h->cap_sys_ptrace)
    h->ptrace.detail +=
        "; works on own children only (Yama ptrace_scope=" + std::to_string(h->yama_ptrace_scope) +
        "; CAP_SYS_PTRACE lifts it)";
}

}  // namespace

std::string_view BranchSourceName(BranchSource s) {
  return WordOf(kBranchSourceWords, s);
}

bool ParseBranchSource(std::string_view name, BranchSource* out) {
  return ParseWord(kBranchSourceWords, name, out);
}

BranchSource HostCapabilities::BestBranchSource() const {
  if (intel_pt.available) return BranchSource::kIntelPt;
  if (lbr.available) return BranchSource::kLbr;
  if (ptrace.available) return BranchSource::kPtraceBursts;
  if (snapshot.available) return BranchSource::kSnapshot;
  return BranchSource::kNone;
}

HostCapabilities ProbeHostCapabilities() {
  HostCapabilities h;
  utsname u{};
  if (uname(&u) == 0) h.kernel_release = u.release;
  h.perf_event_paranoid = procfs::Procfs::Host().ReadSysctlInt("sys/kernel/perf_event_paranoid", 2);
  h.yama_ptrace_scope = procfs::Procfs::Host().ReadSysctlInt("sys/kernel/yama/ptrace_scope", -1);
  h.is_root = geteuid() == 0;
  h.simulated_quirks = SimulatedQuirks().ToString();
  ReadCapabilities(&h);
  ProbeEbpf(&h);
  ProbeSnapshot(&h);
  ProbeLbr(&h);
  ProbeIntelPt(&h);
  ProbePtrace(&h);
  return h;
}

}  // namespace pathprof::collectors
