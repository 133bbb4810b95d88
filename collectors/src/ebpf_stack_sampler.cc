#include "pathprof/collectors/ebpf_stack_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "online_cpus.h"
#include "stack_record.h"
#include "stack_sample.h"
#include "stack_sampler.skel.h"

namespace pathprof::collectors {

struct EbpfStackSampler::Impl {
  stack_sampler_bpf* skel = nullptr;
  ring_buffer* ring = nullptr;
  std::vector<bpf_link*> links;
  bpf_link* fork_link = nullptr;
  std::vector<int> perf_fds;
  const Sink* sink = nullptr;  // valid only during Poll/Drain
  uint64_t delivered = 0;
  int frequency_hz = 0;
  StackTarget config_target;  // what AddPid gives a pid (root = the pid)
  int cpus_skipped = 0;
  std::string event;
  std::vector<std::string> warnings;

  std::vector<int> cpus;
  bool cycles = false;

  // libbpf's ring buffer callback: converts one record and hands it to the current sink.
  static int OnSample(void* ctx, void* data, size_t size);

  // One event per CPU at hz with the program attached (cycles if asked and the host has a PMU).
  void OpenEvents(int hz, bool prefer_cycles);
  void CloseEvents() {
    for (bpf_link* l : links) bpf_link__destroy(l);
    links.clear();
    for (int fd : perf_fds) close(fd);
    perf_fds.clear();
    cpus_skipped = 0;
    warnings.clear();
  }

  ~Impl() {
    if (ring) ring_buffer__free(ring);
    CloseEvents();
    if (fork_link) bpf_link__destroy(fork_link);
    if (skel) stack_sampler_bpf__destroy(skel);
  }
};

namespace {

int OpenPerfEvent(int cpu, int hz, bool cycles) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
  attr.config = cycles ? static_cast<uint64_t>(PERF_COUNT_HW_CPU_CYCLES)
                       : static_cast<uint64_t>(PERF_COUNT_SW_CPU_CLOCK);
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(hz);
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

Status LoadError(int err) {
  std::string msg = "loading the eBPF stack sampler failed: " + std::string(std::strerror(err));
  if (err == EPERM || err == EACCES)
    return Error(ErrorCode::kPermission,
                 msg +
                     "; it needs root or CAP_BPF+CAP_PERFMON (run pathprofd as root, or grant "
                     "those capabilities)");
  return Error(ErrorCode::kUnavailable,
               msg +
                   "; the kernel needs BTF (/sys/kernel/btf/vmlinux) and BPF ring buffers "
                   "(Linux 5.8 or newer)");
}

}  // namespace

void EbpfStackSampler::Impl::OpenEvents(int hz, bool prefer_cycles) {
  cycles = prefer_cycles;
  for (int cpu : cpus) {
    int fd = OpenPerfEvent(cpu, hz, cycles);
    if (fd < 0 && cycles && (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV)) {
      cycles = false;  // no hardware PMU (a VM): cpu-clock works everywhere
      fd = OpenPerfEvent(cpu, hz, false);
    }
    if (fd < 0) {
      warnings.push_back("cpu " + std::to_string(cpu) +
                         ": perf_event_open: " + std::strerror(errno));
      ++cpus_skipped;
      continue;
    }
    perf_fds.push_back(fd);
    bpf_link* link = bpf_program__attach_perf_event(skel->progs.sample_stack, fd);
    if (!link) {
      warnings.push_back("cpu " + std::to_string(cpu) + ": attach: " + std::strerror(errno));
      ++cpus_skipped;
      continue;
    }
    links.push_back(link);
  }
  event = cycles ? "cycles" : "cpu-clock";
}

int EbpfStackSampler::Impl::OnSample(void* ctx, void* data, size_t size) {
  auto* impl = static_cast<Impl*>(ctx);
  if (!impl->sink) return 0;
  RawStackSample out;
  if (!ParseStackRecord(data, size, &out)) return 0;
  ++impl->delivered;
  (*impl->sink)(out);
  return 0;
}

Result<uint32_t> EbpfStackSampler::RingBytesFor(const EbpfSamplerConfig& cfg) {
  PATHPROF_ASSIGN_OR_RETURN(auto cpus, OnlineCpus());
  // A second of samples from every CPU between drains (the default stack copy's records are
  // ~18.6 KiB; without a copy ~2.1 KiB), a power of two as ring buffers must be, 4-64 MiB.
  const uint64_t snapshot =
      cfg.copy_user_stacks && cfg.snapshot.enabled
          ? uint64_t{cfg.snapshot.max_bytes} + sizeof(snapshot_piece) * PATHPROF_SNAPSHOT_MAX_PIECES
          : 0;
  const uint64_t record = cfg.copy_user_stacks ? offsetof(stack_sample, stack) +
                                                     uint64_t{cfg.stack_copy_bytes} + snapshot
                                               : offsetof(stack_sample, regs);
  const uint64_t per_second =
      record * static_cast<uint64_t>(std::max(cfg.frequency_hz, 1)) * cpus.size();
  uint32_t ring = 4u << 20;
  while (ring < per_second && ring < (64u << 20)) ring <<= 1;
  return ring;
}

Status CheckStackFrequency(int hz) {
  if (hz < 1 || hz > 100000)
    return Error(ErrorCode::kInvalidArgument, "stack sampling frequency " + std::to_string(hz) +
                                                  " Hz is out of range (1..100000)");
  return Status::Ok();
}

Status CheckStackCopyBytes(uint32_t bytes) {
  if (bytes < kMinStackCopyBytes || bytes > kMaxStackCopyBytes)
    return Error(ErrorCode::kInvalidArgument,
                 "stack copy of " + std::to_string(bytes) + " bytes is out of range (" +
                     std::to_string(kMinStackCopyBytes) + ".." +
                     std::to_string(kMaxStackCopyBytes) + ", as perf's --call-graph dwarf,SIZE)");
  return Status::Ok();
}

Status CheckSnapshotSettings(const SnapshotSettings& s) {
  static_assert(kMaxSnapshotRange == PATHPROF_SNAPSHOT_MAX_RANGE);
  static_assert(kMaxHintPages == PATHPROF_SNAPSHOT_MAX_HINT_PAGES);
  static_assert(kMaxSnapshotBytes == PATHPROF_SNAPSHOT_MAX_BYTES);
  if (!s.enabled) return Status::Ok();
  if (uint64_t{s.register_below} + s.register_above > kMaxSnapshotRange)
    return Error(ErrorCode::kInvalidArgument,
                 "snapshot register range " + std::to_string(s.register_below) + " below + " +
                     std::to_string(s.register_above) + " above is over " +
                     std::to_string(kMaxSnapshotRange) + " bytes");
  if (s.hint_pages > kMaxHintPages)
    return Error(ErrorCode::kInvalidArgument, "snapshot hint pages " +
                                                  std::to_string(s.hint_pages) + " over " +
                                                  std::to_string(kMaxHintPages));
  if (s.verify_signal < 0 || s.verify_signal >= 64)
    return Error(ErrorCode::kInvalidArgument,
                 "verify signal " + std::to_string(s.verify_signal) + " is not a signal number");
  if (s.max_bytes > kMaxSnapshotBytes)
    return Error(ErrorCode::kInvalidArgument, "snapshot of " + std::to_string(s.max_bytes) +
                                                  " bytes per record is over " +
                                                  std::to_string(kMaxSnapshotBytes));
  return Status::Ok();
}

EbpfStackSampler::EbpfStackSampler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EbpfStackSampler::~EbpfStackSampler() = default;

Result<std::unique_ptr<EbpfStackSampler>> EbpfStackSampler::Start(const EbpfSamplerConfig& cfg) {
  PATHPROF_RETURN_IF_ERROR(CheckStackFrequency(cfg.frequency_hz));
  if (cfg.pids.size() > PATHPROF_MAX_TARGET_PIDS)
    return Error(
        ErrorCode::kInvalidArgument,
        "at most " + std::to_string(PATHPROF_MAX_TARGET_PIDS) + " target pids per sampler");
  if (cfg.copy_user_stacks) PATHPROF_RETURN_IF_ERROR(CheckStackCopyBytes(cfg.stack_copy_bytes));
  PATHPROF_RETURN_IF_ERROR(CheckSnapshotSettings(cfg.snapshot));
  static_assert(kMaxStackCopyBytes == PATHPROF_STACK_COPY_MAX_PAGES * PATHPROF_STACK_PAGE);
  PATHPROF_ASSIGN_OR_RETURN(auto cpus, OnlineCpus());

  auto impl = std::make_unique<Impl>();
  impl->skel = stack_sampler_bpf__open();
  if (!impl->skel) return LoadError(errno);
  StackTarget& target = impl->config_target;
  target.hz = cfg.frequency_hz;
  target.kernel_stacks = cfg.kernel_stacks;
  target.only_uid = cfg.only_uid;
  target.stack_copy_bytes = cfg.copy_user_stacks ? cfg.stack_copy_bytes : 0;
  target.follow_children = cfg.follow_children && !cfg.pids.empty();
  target.cgroup_id = cfg.cgroup_id;
  if (cfg.copy_user_stacks) target.snapshot = cfg.snapshot;
  target.stack_hz = cfg.stack_hz;
  impl->frequency_hz = cfg.frequency_hz;
  uint64_t ring = cfg.ring_bytes;
  if (ring == 0) {
    PATHPROF_ASSIGN_OR_RETURN(ring, RingBytesFor(cfg));
  }
  if (ring < 4096 || (ring & (ring - 1)) != 0 || ring > (1u << 30))
    return Error(ErrorCode::kInvalidArgument, "ring buffer of " + std::to_string(ring) +
                                                  " bytes: it must be a power of two of at "
                                                  "least 4096 bytes and at most 1 GiB");
  (void)bpf_map__set_max_entries(impl->skel->maps.samples, static_cast<uint32_t>(ring));
  const int possible = libbpf_num_possible_cpus();
  if (possible <= 0) return LoadError(-possible);
  (void)bpf_map__set_max_entries(impl->skel->maps.scratch, static_cast<uint32_t>(possible));
  if (int err = stack_sampler_bpf__load(impl->skel)) return LoadError(-err);

  EbpfStackSampler sampler(std::move(impl));
  for (uint32_t pid : cfg.pids) PATHPROF_RETURN_IF_ERROR(sampler.AddPid(pid));
  if (cfg.pids.empty()) {
    StackTarget every = sampler.impl_->config_target;
    every.root = kEveryProcess;
    PATHPROF_RETURN_IF_ERROR(sampler.SetTarget(kEveryProcess, every));
  }
  Impl& m = *sampler.impl_;

  m.cpus = cpus;
  m.OpenEvents(cfg.frequency_hz, cfg.prefer_cycles);
  // Always attached: a target may ask to follow its children at any time. A fork that does not
  // come from such a target costs one hash lookup.
  m.fork_link = bpf_program__attach(m.skel->progs.follow_fork);
  if (!m.fork_link)
    return Error(ErrorCode::kUnavailable,
                 std::string("following a target's children needs the sched_process_fork BTF "
                             "tracepoint (Linux 5.5 or newer): ") +
                     std::strerror(errno));
  if (m.links.empty()) {
    std::string why = m.warnings.empty() ? "no online CPU" : m.warnings.front();
    return Error(ErrorCode::kUnavailable, "the stack sampler could not attach to any CPU (" + why +
                                              "); check perf_event_paranoid and CAP_PERFMON");
  }
  m.ring = ring_buffer__new(bpf_map__fd(m.skel->maps.samples), Impl::OnSample, &m, nullptr);
  if (!m.ring) return LoadError(errno);
  return std::unique_ptr<EbpfStackSampler>(new EbpfStackSampler(std::move(sampler.impl_)));
}

Status EbpfStackSampler::AddPid(uint32_t pid) {
  StackTarget target = impl_->config_target;
  target.root = pid;
  return SetTarget(pid, target);
}

Status EbpfStackSampler::SetTarget(uint32_t pid, const StackTarget& t) {
  if (t.hz < 1 || t.hz > impl_->frequency_hz)
    return Error(ErrorCode::kInvalidArgument, "a target sampled at " + std::to_string(t.hz) +
                                                  " Hz: the sampler's events run at " +
                                                  std::to_string(impl_->frequency_hz) +
                                                  " Hz (raise it first)");
  if (t.stack_copy_bytes != 0) PATHPROF_RETURN_IF_ERROR(CheckStackCopyBytes(t.stack_copy_bytes));
  PATHPROF_RETURN_IF_ERROR(CheckSnapshotSettings(t.snapshot));
  if (t.snapshot.enabled && t.stack_copy_bytes == 0)
    return Error(ErrorCode::kInvalidArgument,
                 "a snapshot needs a stack copy: set the target's stack copy bytes too");
  stack_target v{};
  v.root = t.root;
  v.hz = static_cast<__u32>(t.hz);
  v.keep = t.hz >= impl_->frequency_hz
               ? PATHPROF_KEEP_ALL
               : static_cast<__u32>((static_cast<uint64_t>(t.hz) << 32) /
                                    static_cast<uint64_t>(impl_->frequency_hz));
  v.only_uid = t.only_uid.value_or(0);
  v.confined = t.only_uid.has_value();
  v.cgroup_id = t.cgroup_id;
  v.kernel_stacks = t.kernel_stacks;
  v.stack_pages =
      static_cast<__u8>((t.stack_copy_bytes + PATHPROF_STACK_PAGE - 1) / PATHPROF_STACK_PAGE);
  v.follow_children = t.follow_children;
  v.snapshot = t.snapshot.enabled;
  if (t.snapshot.enabled) {
    v.register_below = static_cast<__u16>(t.snapshot.register_below);
    v.register_above = static_cast<__u16>(t.snapshot.register_above);
    v.hint_pages = static_cast<__u8>(t.snapshot.hint_pages);
    v.snapshot_max_bytes = t.snapshot.max_bytes;
    v.verify_signal = static_cast<__u8>(t.snapshot.verify_signal);
  }
  v.stack_keep = PATHPROF_KEEP_ALL;
  v.stack_hz = v.hz;
  if (t.snapshot.enabled && t.stack_hz > 0 && t.stack_hz < t.hz) {
    v.stack_keep =
        static_cast<__u32>((static_cast<uint64_t>(t.stack_hz) << 32) / static_cast<uint64_t>(t.hz));
    v.stack_hz = static_cast<__u32>(t.stack_hz);
  }
  // The root's counters first, so that no sample of the new target finds none.
  const int ncpus = libbpf_num_possible_cpus();
  std::vector<target_counters> zero(ncpus > 0 ? ncpus : 1);
  const __u32 root = t.root;
  (void)bpf_map__update_elem(impl_->skel->maps.root_counters, &root, sizeof(root), zero.data(),
                             zero.size() * sizeof(target_counters), BPF_NOEXIST);
  if (bpf_map__update_elem(impl_->skel->maps.targets, &pid, sizeof(pid), &v, sizeof(v), BPF_ANY) !=
      0)
    return Error(ErrorCode::kResourceExhausted,
                 "cannot add pid " + std::to_string(pid) + " to the sampler's targets (at most " +
                     std::to_string(PATHPROF_MAX_TARGET_PIDS) + "): " + std::strerror(errno));
  return Status::Ok();
}

Status EbpfStackSampler::SetHintPages(uint32_t pid, const std::vector<uint64_t>& pages) {
  if (pages.size() > kMaxHintPages)
    return Error(ErrorCode::kInvalidArgument, std::to_string(pages.size()) +
                                                  " hint pages for pid " + std::to_string(pid) +
                                                  ": at most " + std::to_string(kMaxHintPages));
  bpf_map* map = impl_->skel->maps.snapshot_hints;
  if (pages.empty()) {
    (void)bpf_map__delete_elem(map, &pid, sizeof(pid), 0);
    return Status::Ok();
  }
  snapshot_hints v{};
  v.count = static_cast<__u32>(pages.size());
  for (size_t i = 0; i < pages.size(); ++i)
    v.page[i] = pages[i] & ~uint64_t{PATHPROF_STACK_PAGE - 1};
  if (bpf_map__update_elem(map, &pid, sizeof(pid), &v, sizeof(v), BPF_ANY) != 0)
    return Error(ErrorCode::kResourceExhausted, "cannot set the hint pages of pid " +
                                                    std::to_string(pid) + " (at most " +
                                                    std::to_string(PATHPROF_MAX_TARGET_PIDS) +
                                                    " processes): " + std::strerror(errno));
  return Status::Ok();
}

Status EbpfStackSampler::RemovePid(uint32_t pid) {
  (void)bpf_map__delete_elem(impl_->skel->maps.snapshot_hints, &pid, sizeof(pid), 0);
  if (bpf_map__delete_elem(impl_->skel->maps.targets, &pid, sizeof(pid), 0) != 0 && errno != ENOENT)
    return Error(ErrorCode::kInternal, "cannot remove pid " + std::to_string(pid) +
                                           " from the sampler's targets: " + std::strerror(errno));
  return Status::Ok();
}

Status EbpfStackSampler::RemoveRoot(uint32_t root) {
  for (const auto& [pid, target] : Targets())
    if (target.root == root) PATHPROF_RETURN_IF_ERROR(RemovePid(pid));
  (void)bpf_map__delete_elem(impl_->skel->maps.root_counters, &root, sizeof(root), 0);
  return Status::Ok();
}

std::vector<std::pair<uint32_t, StackTarget>> EbpfStackSampler::Targets() const {
  std::vector<std::pair<uint32_t, StackTarget>> out;
  bpf_map* map = impl_->skel->maps.targets;
  __u32 key = 0, next = 0;
  const __u32* prev = nullptr;
  // Bounded by the map's size: a map that changes under the walk cannot make it loop forever.
  for (int i = 0; i <= PATHPROF_MAX_TARGET_PIDS; ++i) {
    if (bpf_map__get_next_key(map, prev, &next, sizeof(next)) != 0) break;
    key = next;
    prev = &key;
    stack_target v{};
    if (bpf_map__lookup_elem(map, &key, sizeof(key), &v, sizeof(v), 0) != 0) continue;
    StackTarget t;
    t.root = v.root;
    t.hz = static_cast<int>(v.hz);
    t.kernel_stacks = v.kernel_stacks;
    if (v.confined) t.only_uid = v.only_uid;
    t.stack_copy_bytes = uint32_t{v.stack_pages} * PATHPROF_STACK_PAGE;
    t.follow_children = v.follow_children;
    t.cgroup_id = v.cgroup_id;
    t.snapshot.enabled = v.snapshot != 0;
    if (v.snapshot) {
      t.snapshot.register_below = v.register_below;
      t.snapshot.register_above = v.register_above;
      t.snapshot.hint_pages = v.hint_pages;
      t.snapshot.max_bytes = v.snapshot_max_bytes;
      t.snapshot.verify_signal = v.verify_signal;
      if (v.stack_keep != PATHPROF_KEEP_ALL) t.stack_hz = static_cast<int>(v.stack_hz);
    }
    out.emplace_back(key, t);
  }
  return out;
}

StackTargetCounters EbpfStackSampler::CountersOf(uint32_t root) const {
  const int ncpus = libbpf_num_possible_cpus();
  std::vector<target_counters> per_cpu(ncpus > 0 ? ncpus : 1);
  StackTargetCounters out;
  if (bpf_map__lookup_elem(impl_->skel->maps.root_counters, &root, sizeof(root), per_cpu.data(),
                           per_cpu.size() * sizeof(target_counters), 0) != 0)
    return out;
  for (const target_counters& c : per_cpu) {
    out.submitted += c.submitted;
    out.ringbuf_full += c.ringbuf_full;
    out.filtered_credentials += c.filtered_credentials;
    out.stack_copies_failed += c.stack_copy_failed;
    out.stack_copies_short += c.stack_copy_short;
    out.snapshots_cut += c.snapshot_cut;
    out.snapshot_hints_unreadable += c.snapshot_hint_unreadable;
  }
  return out;
}

Status EbpfStackSampler::SetFrequency(int hz) {
  PATHPROF_RETURN_IF_ERROR(CheckStackFrequency(hz));
  if (hz == impl_->frequency_hz) return Status::Ok();
  // New events at the new rate replace the old ones (a gap of a few hundred microseconds).
  // PERF_EVENT_IOC_PERIOD would change the rate in place, but on Linux 6.18 with cpu-clock
  // events it hung the caller in the kernel on this project's 2-vCPU KVM guest.
  impl_->CloseEvents();
  impl_->OpenEvents(hz, impl_->cycles);
  if (impl_->links.empty())
    return Error(
        ErrorCode::kUnavailable,
        "the stack sampler could not reattach at " + std::to_string(hz) + " Hz (" +
            (impl_->warnings.empty() ? std::string("no online CPU") : impl_->warnings.front()) +
            ")");
  impl_->frequency_hz = hz;
  return Status::Ok();
}

int EbpfStackSampler::frequency_hz() const {
  return impl_->frequency_hz;
}

Result<int> EbpfStackSampler::Poll(int timeout_ms, const Sink& sink) {
  impl_->sink = &sink;
  int n = ring_buffer__poll(impl_->ring, timeout_ms);
  // Samples submitted without a wake-up are not reported by epoll: take them too.
  if (n >= 0 || n == -EINTR) {
    const int more = ring_buffer__consume(impl_->ring);
    n = more < 0 ? more : std::max(n, 0) + more;
  }
  impl_->sink = nullptr;
  if (n < 0 && n != -EINTR)
    return Error(ErrorCode::kIo,
                 std::string("polling the stack ring buffer: ") + std::strerror(-n));
  return n < 0 ? 0 : n;
}

Result<int> EbpfStackSampler::Drain(const Sink& sink) {
  impl_->sink = &sink;
  int n = ring_buffer__consume(impl_->ring);
  impl_->sink = nullptr;
  if (n < 0)
    return Error(ErrorCode::kIo,
                 std::string("draining the stack ring buffer: ") + std::strerror(-n));
  return n;
}

int EbpfStackSampler::epoll_fd() const {
  return ring_buffer__epoll_fd(impl_->ring);
}

EbpfSamplerStats EbpfStackSampler::stats() const {
  EbpfSamplerStats st;
  int ncpus = libbpf_num_possible_cpus();
  std::vector<__u64> values(ncpus > 0 ? ncpus : 1);
  auto sum = [&](__u32 key) -> uint64_t {
    if (bpf_map__lookup_elem(impl_->skel->maps.counters, &key, sizeof(key), values.data(),
                             values.size() * sizeof(__u64), 0) != 0)
      return 0;
    uint64_t total = 0;
    for (__u64 v : values) total += v;
    return total;
  };
  st.events = sum(PATHPROF_COUNTER_EVENTS);
  st.idle = sum(PATHPROF_COUNTER_IDLE);
  st.filtered = sum(PATHPROF_COUNTER_FILTERED);
  st.filtered_credentials = sum(PATHPROF_COUNTER_FILTERED_CREDENTIALS);
  st.ringbuf_full = sum(PATHPROF_COUNTER_RINGBUF_FULL);
  st.user_stack_errors = sum(PATHPROF_COUNTER_USER_STACK_ERROR);
  st.kernel_stack_errors = sum(PATHPROF_COUNTER_KERNEL_STACK_ERROR);
  st.submitted = sum(PATHPROF_COUNTER_SUBMITTED);
  st.stack_copies_short = sum(PATHPROF_COUNTER_STACK_COPY_SHORT);
  st.stack_copies_failed = sum(PATHPROF_COUNTER_STACK_COPY_FAILED);
  st.followed_children = sum(PATHPROF_COUNTER_FOLLOWED_CHILDREN);
  st.thinned = sum(PATHPROF_COUNTER_THINNED);
  st.snapshots = sum(PATHPROF_COUNTER_SNAPSHOTS);
  st.snapshots_cut = sum(PATHPROF_COUNTER_SNAPSHOT_CUT);
  st.snapshot_hints_unreadable = sum(PATHPROF_COUNTER_SNAPSHOT_HINT_UNREADABLE);
  st.snapshot_ranges_unreadable = sum(PATHPROF_COUNTER_SNAPSHOT_RANGE_UNREADABLE);
  st.verify_signals = sum(PATHPROF_COUNTER_VERIFY_SIGNALS);
  st.verify_signals_failed = sum(PATHPROF_COUNTER_VERIFY_SIGNAL_FAILED);
  st.delivered = impl_->delivered;
  st.cpus_attached = static_cast<int>(impl_->links.size());
  st.cpus_skipped = impl_->cpus_skipped;
  st.event = impl_->event;
  st.warnings = impl_->warnings;
  return st;
}

}  // namespace pathprof::collectors
