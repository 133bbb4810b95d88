#include "pathprof/collectors/shared_stack_sampler.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace pathprof::collectors {

struct StackSubscription::Member {
  StackSubscriptionSettings settings;
  Sink sink;
  std::set<uint32_t> roots;  // the pids asked for; empty for an every-process subscription
  // Roots whose followed children still come here: a root that exits leaves `roots` (its pid
  // may be reused) but its children keep their targets until the subscription ends.
  std::set<uint32_t> lineages;
  uint64_t credit = 0;  // thinning a faster target's samples to this subscription's rate
  uint64_t delivered = 0;
  uint64_t filtered_here = 0;  // credentials checked in user space (the target was shared)
  // Each root's counters when it joined, and what roots that left had counted.
  std::map<uint32_t, StackTargetCounters> baseline;
  StackTargetCounters retired;
  StackTargetCounters host_baseline;  // an every-process subscription counts the host's losses

  bool every() const { return settings.pids.empty(); }
};

namespace {

StackTargetCounters Minus(const StackTargetCounters& a, const StackTargetCounters& b) {
  auto d = [](uint64_t x, uint64_t y) { return x > y ? x - y : 0; };
  return {d(a.submitted, b.submitted),
          d(a.ringbuf_full, b.ringbuf_full),
          d(a.filtered_credentials, b.filtered_credentials),
          d(a.stack_copies_failed, b.stack_copies_failed),
          d(a.stack_copies_short, b.stack_copies_short),
          d(a.snapshots_cut, b.snapshots_cut),
          d(a.snapshot_hints_unreadable, b.snapshot_hints_unreadable)};
}

// The host's counters, for an every-process subscription.
StackTargetCounters HostCounters(const EbpfSamplerStats& st) {
  return {
      st.submitted,          st.ringbuf_full,  st.filtered_credentials,     st.stack_copies_failed,
      st.stack_copies_short, st.snapshots_cut, st.snapshot_hints_unreadable};
}

void Add(StackTargetCounters* to, const StackTargetCounters& c) {
  to->submitted += c.submitted;
  to->ringbuf_full += c.ringbuf_full;
  to->filtered_credentials += c.filtered_credentials;
  to->stack_copies_failed += c.stack_copies_failed;
  to->stack_copies_short += c.stack_copies_short;
  to->snapshots_cut += c.snapshots_cut;
  to->snapshot_hints_unreadable += c.snapshot_hints_unreadable;
}

}  // namespace

struct StackSubscription::Host {
  // Guards the members, the sampler's targets and the routing; held while sinks run, so that a
  // member that leaves is never called again.
  mutable std::mutex mu;
  std::unique_ptr<EbpfStackSampler> sampler;
  std::vector<std::shared_ptr<Member>> members;
  std::set<uint32_t> roots_in_kernel;
  std::thread reader;
  std::atomic<bool> stop{false};

  ~Host() {
    stop.store(true);
    if (reader.joinable()) reader.join();
  }

  // What the sampler does for `root` (kEveryProcess: any other process): what every member that
  // wants it asks, together. Every-process members want every root too.
  StackTarget Merge(uint32_t root) const {
    StackTarget t;
    t.root = root;
    t.hz = 0;
    t.kernel_stacks = false;
    t.snapshot.enabled = false;
    t.snapshot.verify_signal = 0;
    int stack_hz = 0;  // the fastest member that wants frames (no snapshot)
    bool all_confined = true;
    std::optional<uint32_t> uid;
    std::optional<uint64_t> cgroup;
    bool cgroups_differ = false;
    for (const auto& m : members) {
      const bool wants = root == kEveryProcess
                             ? m->every()
                             : m->every() || m->roots.contains(root) || m->lineages.contains(root);
      if (!wants) continue;
      const StackSubscriptionSettings& s = m->settings;
      t.hz = std::max(t.hz, s.frequency_hz);
      if (!s.snapshot.enabled) stack_hz = std::max(stack_hz, s.frequency_hz);
      t.kernel_stacks |= s.kernel_stacks;
      t.stack_copy_bytes = std::max(t.stack_copy_bytes, s.stack_copy_bytes);
      if (!m->every()) t.follow_children |= s.follow_children;
      if (s.snapshot.enabled) {
        // The widest of what the members ask: each finds its own in the record.
        SnapshotSettings& sn = t.snapshot;
        sn.register_below = sn.enabled ? std::max(sn.register_below, s.snapshot.register_below)
                                       : s.snapshot.register_below;
        sn.register_above = sn.enabled ? std::max(sn.register_above, s.snapshot.register_above)
                                       : s.snapshot.register_above;
        sn.hint_pages =
            sn.enabled ? std::max(sn.hint_pages, s.snapshot.hint_pages) : s.snapshot.hint_pages;
        sn.max_bytes =
            sn.enabled ? std::max(sn.max_bytes, s.snapshot.max_bytes) : s.snapshot.max_bytes;
        if (s.snapshot.verify_signal) sn.verify_signal = s.snapshot.verify_signal;
        sn.enabled = true;
      }
      if (!s.only_uid || (uid && *uid != *s.only_uid)) all_confined = false;
      uid = s.only_uid;
      if (m->every()) {
        if (cgroup && *cgroup != s.cgroup_id) cgroups_differ = true;
        cgroup = s.cgroup_id;
      }
    }
    // The kernel filters credentials only when every member would; otherwise each confined
    // member checks the record's plain uid (Route).
    if (all_confined && uid) t.only_uid = uid;
    // Samples taken faster than any stack member wants, for snapshots, walk no frames (one a
    // second at least, where none wants them).
    if (t.snapshot.enabled) t.stack_hz = std::max(stack_hz, 1);
    if (root == kEveryProcess && cgroup && !cgroups_differ) t.cgroup_id = *cgroup;
    return t;
  }

  // Brings the sampler's rate and targets to what the members want now. Under mu.
  Status Reconfigure() {
    int hz = 1;
    std::set<uint32_t> roots, lineages;
    bool any_every = false;
    for (const auto& m : members) {
      hz = std::max(hz, m->settings.frequency_hz);
      roots.insert(m->roots.begin(), m->roots.end());
      lineages.insert(m->lineages.begin(), m->lineages.end());
      any_every |= m->every();
    }
    if (hz != sampler->frequency_hz()) PATHPROF_RETURN_IF_ERROR(sampler->SetFrequency(hz));
    std::map<uint32_t, StackTarget> wanted;
    for (uint32_t root : roots) wanted[root] = Merge(root);
    if (any_every) wanted[kEveryProcess] = Merge(kEveryProcess);
    // Children the kernel added follow their root's target, also after the root itself exited;
    // those of a root no subscription follows any more leave, as does a root's own entry once
    // it is not wanted (its pid may be reused).
    for (const auto& [pid, target] : sampler->Targets()) {
      if (wanted.contains(pid)) continue;
      const bool child = pid != target.root && target.root != kEveryProcess;
      if (child && (wanted.contains(target.root) || lineages.contains(target.root)))
        PATHPROF_RETURN_IF_ERROR(sampler->SetTarget(pid, Merge(target.root)));
      else
        PATHPROF_RETURN_IF_ERROR(sampler->RemovePid(pid));
    }
    for (const auto& [pid, target] : wanted)
      PATHPROF_RETURN_IF_ERROR(sampler->SetTarget(pid, target));
    std::set<uint32_t> in_use = lineages;
    for (const auto& [pid, target] : wanted) in_use.insert(pid);
    for (uint32_t root : roots_in_kernel)
      if (!in_use.contains(root)) PATHPROF_RETURN_IF_ERROR(sampler->RemoveRoot(root));
    roots_in_kernel = std::move(in_use);
    return Status::Ok();
  }

  // One record to the members it belongs to. Under mu.
  void Route(const RawStackSample& sample) {
    const uint32_t reach = sample.stack.empty() ? 0 : Reach(sample);
    for (const auto& m : members) {
      const StackSubscriptionSettings& s = m->settings;
      bool mine;
      if (m->every())
        mine = s.cgroup_id == 0 || s.cgroup_id == sample.cgroup_id;
      else
        mine = m->roots.contains(sample.pid) ||
               (s.follow_children && m->lineages.contains(sample.root));
      if (!mine) continue;
      if (s.only_uid && sample.plain_uid != *s.only_uid) {
        ++m->filtered_here;
        continue;
      }
      // A member without snapshots takes only the samples that walked frames, which come at
      // the target's stack rate.
      uint32_t rate = sample.hz;
      if (!s.snapshot.enabled) {
        if (!sample.frames_walked) continue;
        if (sample.stack_hz > 0 && sample.stack_hz < rate) rate = sample.stack_hz;
      }
      if (static_cast<uint32_t>(s.frequency_hz) < rate) {
        // Evenly thinned: of every `rate` samples, frequency_hz pass.
        m->credit += static_cast<uint64_t>(s.frequency_hz);
        if (m->credit < rate) continue;
        m->credit -= rate;
      }
      ++m->delivered;
      const bool cut_kernel = !s.kernel_stacks && !sample.kernel.empty();
      const bool cut_stack = reach > s.stack_copy_bytes;
      const bool cut_snapshot = !s.snapshot.enabled && sample.snapshot;
      if (!cut_kernel && !cut_stack && !cut_snapshot) {
        m->sink(sample);
        continue;
      }
      RawStackSample cut = sample;
      if (cut_kernel) cut.kernel.clear();
      if (cut_stack) CutStack(&cut, s.stack_copy_bytes);
      if (cut_snapshot) cut.snapshot.reset();
      m->sink(cut);
    }
  }

  // How far the copy reaches from the start of the stack pointer's page.
  static uint32_t Reach(const RawStackSample& s) {
    return static_cast<uint32_t>((s.stack_start & (kPage - 1)) + s.stack.size());
  }
  // What a member that asked for `bytes` would have been given: the same pages, fewer of them.
  static void CutStack(RawStackSample* s, uint32_t bytes) {
    const uint64_t offset = s->stack_start & (kPage - 1);
    if (bytes <= offset) {
      s->stack.clear();
      s->regs.clear();
      s->stack_start = 0;
      return;
    }
    s->stack.resize(std::min<uint64_t>(s->stack.size(), bytes - offset));
  }
  static constexpr uint64_t kPage = 4096;

  void Drain() {
    (void)sampler->Drain([this](const RawStackSample& s) { Route(s); });
  }

  // Waits (unlocked) for the ring to fill to an eighth or for 50 ms, then routes what it holds.
  void ReadLoop() {
    const int fd = sampler->epoll_fd();
    while (!stop.load()) {
      pollfd p{fd, POLLIN, 0};
      (void)poll(&p, 1, 50);
      std::lock_guard<std::mutex> lock(mu);
      Drain();
    }
  }
};

namespace {

// The process's sampler while any subscription holds it.
std::mutex g_host_mu;
std::weak_ptr<StackSubscription::Host> g_host;

Status ValidateSettings(const StackSubscriptionSettings& s) {
  PATHPROF_RETURN_IF_ERROR(CheckStackFrequency(s.frequency_hz));
  if (s.stack_copy_bytes != 0) PATHPROF_RETURN_IF_ERROR(CheckStackCopyBytes(s.stack_copy_bytes));
  PATHPROF_RETURN_IF_ERROR(CheckSnapshotSettings(s.snapshot));
  if (s.snapshot.enabled && s.stack_copy_bytes == 0)
    return Error(ErrorCode::kInvalidArgument, "a snapshot subscription needs a stack copy");
  if (std::find(s.pids.begin(), s.pids.end(), kEveryProcess) != s.pids.end())
    return Error(ErrorCode::kInvalidArgument, "pid 0 is not a process to sample");
  return Status::Ok();
}

}  // namespace

StackSubscription::StackSubscription(std::shared_ptr<Host> host, std::shared_ptr<Member> member)
    : host_(std::move(host)), member_(std::move(member)) {}

Result<std::unique_ptr<StackSubscription>> StackSubscription::Start(
    const StackSubscriptionSettings& settings, Sink sink) {
  PATHPROF_RETURN_IF_ERROR(ValidateSettings(settings));
  std::shared_ptr<Host> host;
  {
    std::lock_guard<std::mutex> lock(g_host_mu);
    host = g_host.lock();
    if (!host) {
      // The first subscription opens the sampler with its own targets, so nothing else is
      // sampled even for a moment. The ring is sized for the host: a second of the default
      // stack copy at 99 Hz or this rate from every CPU (4-64 MiB), whatever the first asks.
      EbpfSamplerConfig config;
      config.frequency_hz = settings.frequency_hz;
      config.pids = settings.pids;
      config.cgroup_id = settings.cgroup_id;
      config.kernel_stacks = settings.kernel_stacks;
      config.only_uid = settings.only_uid;
      config.copy_user_stacks = settings.stack_copy_bytes != 0;
      if (config.copy_user_stacks) config.stack_copy_bytes = settings.stack_copy_bytes;
      config.snapshot = settings.snapshot;
      config.follow_children = settings.follow_children;
      EbpfSamplerConfig sizing = config;
      sizing.frequency_hz = std::max(settings.frequency_hz, 99);
      sizing.copy_user_stacks = true;
      sizing.stack_copy_bytes = std::max(config.stack_copy_bytes, kDefaultStackCopyBytes);
      // A snapshot subscription that comes later shares this ring, and its losses to a full
      // ring are counted (ringbuf_full): sizing every host's ring for snapshots would take
      // memory from the stacks-only hosts, most of them.
      sizing.snapshot = settings.snapshot;
      PATHPROF_ASSIGN_OR_RETURN(config.ring_bytes, EbpfStackSampler::RingBytesFor(sizing));
      PATHPROF_ASSIGN_OR_RETURN(auto sampler, EbpfStackSampler::Start(config));
      host = std::make_shared<Host>();
      host->sampler = std::move(sampler);
      Host* h = host.get();
      host->reader = std::thread([h] { h->ReadLoop(); });
      g_host = host;
    }
  }
  auto member = std::make_shared<Member>();
  member->settings = settings;
  member->sink = std::move(sink);
  member->roots.insert(settings.pids.begin(), settings.pids.end());
  if (settings.follow_children) member->lineages = member->roots;
  std::lock_guard<std::mutex> lock(host->mu);
  for (uint32_t root : member->roots) member->baseline[root] = host->sampler->CountersOf(root);
  member->host_baseline = HostCounters(host->sampler->stats());
  host->members.push_back(member);
  if (Status st = host->Reconfigure(); !st.ok()) {
    host->members.pop_back();
    (void)host->Reconfigure();
    return st;
  }
  return std::unique_ptr<StackSubscription>(new StackSubscription(host, std::move(member)));
}

StackSubscription::~StackSubscription() {
  std::lock_guard<std::mutex> lock(host_->mu);
  auto& ms = host_->members;
  ms.erase(std::remove(ms.begin(), ms.end(), member_), ms.end());
  // With no member left, the sampler samples nothing if someone keeps it (KeepHostSampler);
  // if not, it goes with host_.
  if (!ms.empty() || host_.use_count() > 1) (void)host_->Reconfigure();
}

std::shared_ptr<const void> StackSubscription::KeepHostSampler() {
  std::lock_guard<std::mutex> lock(g_host_mu);
  return g_host.lock();
}

Status StackSubscription::AddPid(uint32_t pid) {
  if (pid == kEveryProcess) return Error(ErrorCode::kInvalidArgument, "pid 0 is not a process");
  std::lock_guard<std::mutex> lock(host_->mu);
  if (member_->every()) return Status::Ok();  // it has every process already
  if (!member_->roots.insert(pid).second) return Status::Ok();
  if (member_->settings.follow_children) member_->lineages.insert(pid);
  if (!member_->baseline.contains(pid)) member_->baseline[pid] = host_->sampler->CountersOf(pid);
  return host_->Reconfigure();
}

Status StackSubscription::RemovePid(uint32_t pid) {
  std::lock_guard<std::mutex> lock(host_->mu);
  if (member_->roots.erase(pid) == 0) {
    // A child the kernel added (it exited): its entry goes before its pid can be reused by an
    // unrelated process, unless another subscription asked for that pid itself.
    for (const auto& m : host_->members)
      if (m->roots.contains(pid)) return Status::Ok();
    return host_->sampler->RemovePid(pid);
  }
  // A followed root's children stay this subscription's, and its counters with them.
  if (!member_->lineages.contains(pid)) {
    Add(&member_->retired, Minus(host_->sampler->CountersOf(pid), member_->baseline[pid]));
    member_->baseline.erase(pid);
  }
  return host_->Reconfigure();
}

Status StackSubscription::SetHintPages(uint32_t pid, const std::vector<uint64_t>& pages) {
  std::lock_guard<std::mutex> lock(host_->mu);
  return host_->sampler->SetHintPages(pid, pages);
}

void StackSubscription::Flush() {
  std::lock_guard<std::mutex> lock(host_->mu);
  host_->Drain();
}

StackSubscriptionStats StackSubscription::stats() const {
  std::lock_guard<std::mutex> lock(host_->mu);
  const Member& m = *member_;
  StackSubscriptionStats out;
  const EbpfSamplerStats host = host_->sampler->stats();
  StackTargetCounters c = m.retired;
  if (m.every()) {
    // Every process: the host's losses are this subscription's.
    Add(&c, Minus(HostCounters(host), m.host_baseline));
  } else {
    // Its roots and the lineages of followed roots that exited.
    for (const auto& [root, base] : m.baseline)
      Add(&c, Minus(host_->sampler->CountersOf(root), base));
  }
  out.delivered = m.delivered;
  out.ringbuf_full = c.ringbuf_full;
  // Only a confined subscription was ever filtered by credentials; the kernel filtered for it
  // only while every member of the target was confined as it is.
  out.filtered_credentials = m.settings.only_uid ? c.filtered_credentials + m.filtered_here : 0;
  out.stack_copies_failed = m.settings.stack_copy_bytes ? c.stack_copies_failed : 0;
  out.stack_copies_short = m.settings.stack_copy_bytes ? c.stack_copies_short : 0;
  out.snapshots_cut = m.settings.snapshot.enabled ? c.snapshots_cut : 0;
  out.snapshot_hints_unreadable = m.settings.snapshot.enabled ? c.snapshot_hints_unreadable : 0;
  out.event = host.event;
  out.sampler_hz = host_->sampler->frequency_hz();
  out.subscriptions = static_cast<int>(host_->members.size());
  out.cpus_attached = host.cpus_attached;
  return out;
}

}  // namespace pathprof::collectors
